package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// upperCholOfInverse returns the upper Cholesky factor U of a⁻¹ ([n][n]
// symmetric positive definite) the plain way, with gonum directly:
// a = LLᵀ (dpotrf), a⁻¹ (dpotri), a⁻¹ = UᵀU (dpotrf, upper).
func upperCholOfInverse(t *testing.T, a []float64, n int) []float64 {
	t.Helper()
	c := append([]float64(nil), a...)
	l, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: c})
	if !ok {
		t.Fatal("reference: not positive definite")
	}
	inv, ok := lapack64.Potri(l)
	if !ok {
		t.Fatal("reference: singular")
	}
	for i := range n { // mirror the lower triangle into the upper
		for j := range i {
			inv.Data[j*n+i] = inv.Data[i*n+j]
		}
	}
	u, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: inv.Data})
	if !ok {
		t.Fatal("reference: H⁻¹ not positive definite")
	}
	for i := range n {
		for j := range i {
			u.Data[i*n+j] = 0
		}
	}
	return u.Data
}

// backends returns the backends this build has: the pure-Go one and, with
// the openblas tag, the selected la as well.
func backends() []linalg {
	if la.name() == (goLA{}).name() {
		return []linalg{la}
	}
	return []linalg{goLA{}, la}
}

// withBackend runs fn with la set to b (tests in this package do not run
// in parallel).
func withBackend(b linalg, fn func()) {
	old := la
	la = b
	defer func() { la = old }()
	fn()
}

// spd returns a random symmetric positive definite n×n matrix: XᵀX/m of
// m = 2n Gaussian rows plus 0.1·I (condition number ≲ 40).
func spd(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x5bd))
	m := 2 * n
	x := make([]float64, m*n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			var s float64
			for k := range m {
				s += x[k*n+i] * x[k*n+j]
			}
			a[i*n+j] = s / float64(m)
		}
		a[i*n+i] += 0.1
	}
	return a
}

// TestCholInv checks each backend's L⁻¹ (a = LLᵀ) through a⁻¹ = L⁻ᵀL⁻¹:
// ‖L⁻ᵀL⁻¹·a − I‖_max must be float64 rounding times the condition number
// (≲ 40) and n: 10⁻¹⁰ leaves a margin of ~10³. n = 300 takes the
// pure-Go backend's recursive inverse two levels deep (trinvBase = 128).
// The strict upper triangle must come back zero, and an indefinite matrix
// must be refused.
func TestCholInv(t *testing.T) {
	const n = 300
	a := spd(n, 1)
	for _, b := range backends() {
		m := append([]float64(nil), a...)
		for i := range n {
			for j := i + 1; j < n; j++ {
				m[i*n+j] = -7 // sentinel in the strict upper triangle
			}
		}
		if !b.cholInv(m, n) {
			t.Fatalf("%s: refused a positive definite matrix", b.name())
		}
		inv := make([]float64, n*n) // MᵀM with M = L⁻¹ (lower)
		for i := range n {
			for j := i + 1; j < n; j++ {
				if m[i*n+j] != 0 {
					t.Fatalf("%s: upper triangle [%d][%d] = %v, not zeroed", b.name(), i, j, m[i*n+j])
				}
			}
			for k := range n {
				var s float64
				for l := max(i, k); l < n; l++ {
					s += m[l*n+i] * m[l*n+k]
				}
				inv[i*n+k] = s
			}
		}
		var worst float64
		for i := range n {
			for j := range n {
				var s float64
				for k := range n {
					s += inv[i*n+k] * a[k*n+j]
				}
				if i == j {
					s--
				}
				worst = max(worst, math.Abs(s))
			}
		}
		if worst > 1e-10 {
			t.Errorf("%s: ‖L⁻ᵀL⁻¹a − I‖ = %g", b.name(), worst)
		}
		bad := []float64{1, 0, 0, 2, -1, 0, 0, 0, 1} // lower triangle of an indefinite matrix
		if b.cholInv(bad, 3) {
			t.Errorf("%s: accepted an indefinite matrix", b.name())
		}
	}
}

// TestGemmSub and dgemm against plain float64 loops. gemmSub rounds b to
// float32 and sums k = 37 float32 products: the error is at most
// (k+2)·2⁻²⁴ of Σ|a·b| per entry. dgemm: (k+2)·2⁻⁵³ of it.
func TestGemmSubDgemm(t *testing.T) {
	const m, n, k, ldc, lda, ldb = 300, 33, 37, 40, 39, 50
	r := rand.New(rand.NewPCG(9, 9))
	a32, c32 := make([]float32, m*lda), make([]float32, m*ldc)
	a64, b64 := make([]float64, m*k), make([]float64, k*ldb) // a64: a packed contiguously
	for i := range m {
		for l := range k {
			a32[i*lda+l] = float32(r.NormFloat64())
			a64[i*k+l] = float64(a32[i*lda+l])
		}
	}
	for i := range b64 {
		b64[i] = r.NormFloat64()
	}
	for i := range c32 {
		c32[i] = float32(r.NormFloat64())
	}
	bc := make([]float64, k*n) // b packed contiguously for dgemm
	for l := range k {
		copy(bc[l*n:(l+1)*n], b64[l*ldb:])
	}
	for _, be := range backends() {
		c := append([]float32(nil), c32...)
		be.gemmSub(c, ldc, a32, lda, b64, ldb, m, n, k)
		d := make([]float64, m*n)
		be.dgemm(d, a64, bc, m, n, k)
		for i := range m {
			for j := range ldc {
				if j >= n {
					if c[i*ldc+j] != c32[i*ldc+j] {
						t.Fatalf("%s: gemmSub wrote past column %d", be.name(), n)
					}
					continue
				}
				var s, abs float64
				for l := range k {
					p := a64[i*k+l] * b64[l*ldb+j]
					s, abs = s+p, abs+math.Abs(p)
				}
				want := float64(c32[i*ldc+j]) - s
				if e := math.Abs(float64(c[i*ldc+j]) - want); e > (k+2)*0x1p-24*(abs+math.Abs(float64(c32[i*ldc+j]))) {
					t.Fatalf("%s: gemmSub [%d][%d] = %v, want %v", be.name(), i, j, c[i*ldc+j], want)
				}
				if e := math.Abs(d[i*n+j] - s); e > (k+2)*0x1p-53*abs {
					t.Fatalf("%s: dgemm [%d][%d] = %v, want %v", be.name(), i, j, d[i*n+j], s)
				}
			}
		}
	}
}

// TestBackendsAgree (builds with the openblas tag): the pure-Go and
// OpenBLAS backends give the same Hessian within the pure-Go bound (its
// float32 chunk sums, ≈ 7.7·10⁻⁶ of B = |X|ᵀ|X|/N; OpenBLAS is exact to
// ~10⁻¹³), and GPTQ, run from each backend's own Hessian, the same codes.
// Codes could legitimately differ where a weight lies within rounding of
// a midpoint between entries, so the assertion is ≥ 99% equal codes and
// held-out output SNRs within 0.01 dB (measured: identical codes).
func TestBackendsAgree(t *testing.T) {
	bs := backends()
	if len(bs) < 2 {
		t.Skip("one backend in this build; run with -tags openblas to compare it with OpenBLAS")
	}
	const out, in, rows = 64, 160, 640
	x := correlated(rows, in, 8, 1)
	held := hessianOf(correlated(rows, in, 8, 2))
	_, bound := hessianRef(x)
	w := gaussian(out, in, true, 8)
	hs := make([]*Hessian, len(bs))
	for k, b := range bs {
		withBackend(b, func() { hs[k] = hessianOf(x) })
	}
	h0, h1 := hs[0].Matrix(), hs[1].Matrix()
	tol := hessTol(goLA{}, rows) + hessTol(bs[1], rows)
	for i := range h0 {
		if math.Abs(h0[i]-h1[i]) > tol*bound[i] {
			t.Fatalf("H[%d]: %s %v, %s %v", i, bs[0].name(), h0[i], bs[1].name(), h1[i])
		}
	}
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		q := GPTQ{Format: mustFormat(t, name), Options: Options{Seed: 2}, Block: 64}
		var codes [2][]uint8
		var snr [2]float64
		for k, b := range bs {
			withBackend(b, func() {
				m, err := q.Quantize(w, hs[k])
				if err != nil {
					t.Fatal(err)
				}
				codes[k] = append([]uint8(nil), m.Parts().Index...)
				snr[k] = OutputSNR(w, dequant(m), held)
			})
		}
		diff := 0
		for i := range codes[0] {
			if codes[0][i] != codes[1][i] {
				diff++
			}
		}
		t.Logf("%s: %d of %d packed index bytes differ; held-out SNR %.4f vs %.4f dB", name, diff, len(codes[0]), snr[0], snr[1])
		if diff > len(codes[0])/100 || math.Abs(snr[0]-snr[1]) > 0.01 {
			t.Errorf("%s: %d of %d index bytes differ, SNR %.4f vs %.4f dB", name, diff, len(codes[0]), snr[0], snr[1])
		}
	}
}
