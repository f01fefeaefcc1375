package quant

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"

	"forge/tensor"
)

// goLA is the pure-Go backend: gonum (lapack64.Potrf, a recursive
// triangular inverse on blas64.Gemm, blas64.Gemm) for float64 work, forge's float32 GEMM (tensor.Dense.Mul)
// for the Hessian's chunk products and GPTQ's lazy batch updates.
type goLA struct{}

func (goLA) name() string { return "go" }

const (
	// syrkPanel is the number of rows of xᵀx that syrk computes per
	// tensor.Dense.Mul call: panel [p0, p1) computes columns [0, p1), so
	// only the diagonal blocks' upper halves (≈ n·syrkPanel/2 of n²/2
	// entries) are computed in vain.
	syrkPanel = 256
	// gemmRows is the number of rows of c that gemmSub multiplies into
	// scratch at a time (bounds the scratch to gemmRows·n float32).
	gemmRows = 256
)

// f32Scratch pools float32 scratch buffers for syrk and gemmSub.
var f32Scratch sync.Pool

func getF32(n int) *[]float32 {
	if p, ok := f32Scratch.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

// syrk computes xᵀx with tensor.Dense: with xt = xᵀ [n][k] as both the
// input rows and the weights, Mul gives xt·xtᵀ = xᵀx; rounding is float32
// throughout (products, and sums over the k rows), then each entry is
// added to c in float64.
func (goLA) syrk(c []float64, x []float32, k, n int) {
	xtp := getF32(n * k)
	defer f32Scratch.Put(xtp)
	xt := *xtp // [n][k] = xᵀ
	for t := range k {
		for j, v := range x[t*n : (t+1)*n] {
			xt[j*k+t] = v
		}
	}
	dp := getF32(min(syrkPanel, n) * n)
	defer f32Scratch.Put(dp)
	for p0 := 0; p0 < n; p0 += syrkPanel {
		p1 := min(p0+syrkPanel, n)
		dst := tensor.FromSlice(p1-p0, p1, *dp) // [p1−p0][p1] rows p0… of xᵀx, columns < p1
		tensor.DenseF32(p1, k, xt).Mul(dst, tensor.FromSlice(p1-p0, k, xt[p0*k:]))
		parallel(p1-p0, max(1, 1<<15/p1), func(lo, hi int) {
			for a := lo; a < hi; a++ {
				i := p0 + a
				ci, da := c[i*n:i*n+i+1], dst.Data[a*p1:a*p1+i+1]
				for j, v := range da {
					ci[j] += float64(v)
				}
			}
		})
	}
}

// cholInv runs gonum's Dpotrf on the row-major lower triangle, then
// trinv.
func (goLA) cholInv(a []float64, n int) bool {
	zeroUpper(a, n)
	_, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: a})
	if !ok {
		return false
	}
	trinv(a, n, n, make([]float64, (n/2)*(n-n/2)))
	return true
}

// trinvBase is the order below which trinv calls gonum's Dtrtri.
const trinvBase = 128

// trinv inverts the lower triangular l [n][n] (row stride ld, non-zero
// diagonal, zero strict upper triangle) in place, recursively: with
// l = [[L11, 0], [L21, L22]] (L11 of order n1 = n/2),
//
//	l⁻¹ = [[L11⁻¹, 0], [−L22⁻¹·L21·L11⁻¹, L22⁻¹]]
//
// and the two products as general dgemm (the zero upper triangles make
// that exact). That is 2n³/3 flops against Dtrtri's n³/3, but gonum's
// Dgemm is parallel and blocked while its Dtrmm, which Dtrtri spends its
// time in, is neither: measured 1.1–1.2× faster at n = 3072–5120 on two
// cores (10.4 s against 12.3 s at 5120). tmp holds ≥ n1·(n−n1) values.
func trinv(l []float64, n, ld int, tmp []float64) {
	if n <= trinvBase {
		lapack64.Trtri(blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: max(1, ld), Data: l})
		return
	}
	n1 := n / 2
	n2 := n - n1
	trinv(l, n1, ld, tmp)
	trinv(l[n1*ld+n1:], n2, ld, tmp)
	l11 := blas64.General{Rows: n1, Cols: n1, Stride: ld, Data: l}
	l21 := blas64.General{Rows: n2, Cols: n1, Stride: ld, Data: l[n1*ld:]}
	l22 := blas64.General{Rows: n2, Cols: n2, Stride: ld, Data: l[n1*ld+n1:]}
	t := blas64.General{Rows: n2, Cols: n1, Stride: n1, Data: tmp[:n2*n1]} // L21·L11⁻¹
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, l21, l11, 0, t)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, l22, t, 0, l21)
}

// gemmSub multiplies gemmRows rows of a at a time (copied contiguous) by
// b with tensor.Dense (weights bᵀ [n][k] rounded to float32) into scratch
// and subtracts it from c.
func (goLA) gemmSub(c []float32, ldc int, a []float32, lda int, b []float64, ldb, m, n, k int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	btp := getF32(n * k)
	defer f32Scratch.Put(btp)
	bt := *btp // [n][k] = bᵀ
	for l := range k {
		for j, v := range b[l*ldb : l*ldb+n] {
			bt[j*k+l] = float32(v)
		}
	}
	d := tensor.DenseF32(n, k, bt)
	dp, xp := getF32(min(gemmRows, m)*n), getF32(min(gemmRows, m)*k)
	defer f32Scratch.Put(dp)
	defer f32Scratch.Put(xp)
	for r0 := 0; r0 < m; r0 += gemmRows {
		r1 := min(r0+gemmRows, m)
		x := tensor.FromSlice(r1-r0, k, *xp) // [r1−r0][k] = a[r0:r1]
		for i := range r1 - r0 {
			copy(x.Row(i), a[(r0+i)*lda:(r0+i)*lda+k])
		}
		dst := tensor.FromSlice(r1-r0, n, *dp) // [r1−r0][n] = a[r0:r1]·b
		d.Mul(dst, x)
		parallel(r1-r0, max(1, 1<<15/n), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				ci := c[(r0+i)*ldc : (r0+i)*ldc+n]
				for j, v := range dst.Data[i*n : (i+1)*n] {
					ci[j] -= v
				}
			}
		})
	}
}

// dgemm is gonum's (parallel) Dgemm.
func (goLA) dgemm(c, a, b []float64, m, n, k int) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: m, Cols: k, Stride: max(1, k), Data: a},
		blas64.General{Rows: k, Cols: n, Stride: max(1, n), Data: b},
		0, blas64.General{Rows: m, Cols: n, Stride: max(1, n), Data: c})
}

// zeroUpper zeroes the strict upper triangle of a [n][n].
func zeroUpper(a []float64, n int) {
	for i := range n {
		clear(a[i*n+i+1 : (i+1)*n])
	}
}
