package recon

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// gemm sets c [m][n] = a·b (acc false) or adds it (acc true), with a and
// b read transposed when ta, tb are set: op(a) [m][k], op(b) [k][n]; all
// row-major and contiguous (a is [m][k] or, transposed, [k][m]).
func gemm(c []float64, ta bool, a []float64, tb bool, b []float64, m, n, k int, acc bool) {
	if m == 0 || n == 0 {
		return
	}
	beta := 0.0
	if acc {
		beta = 1
	}
	if k == 0 {
		if !acc {
			clear(c[:m*n])
		}
		return
	}
	A := blas64.General{Rows: m, Cols: k, Stride: k, Data: a}
	tA := blas.NoTrans
	if ta {
		A = blas64.General{Rows: k, Cols: m, Stride: m, Data: a}
		tA = blas.Trans
	}
	B := blas64.General{Rows: k, Cols: n, Stride: n, Data: b}
	tB := blas.NoTrans
	if tb {
		B = blas64.General{Rows: n, Cols: k, Stride: k, Data: b}
		tB = blas.Trans
	}
	blas64.Gemm(tA, tB, 1, A, B, beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
}

// grow returns b resized to n (contents unspecified).
func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
