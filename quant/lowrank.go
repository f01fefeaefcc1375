package quant

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"forge/tensor"
)

// lowRankStream is the second PCG seed word of the Gaussian test matrix
// (the first is LowRankOptions.Seed): ASCII "LOWRANK".
const lowRankStream = 0x4c4f5752414e4b

// lowRankPanel is how many rows of E are widened to float64 at a time for
// one gonum Dgemm call (256·in·8 bytes: 10 MB at in = 5120).
const lowRankPanel = 256

// LowRankOptions tune LowRank. The zero value is the reference setting:
// unweighted, p = 10, q = 2, seed 0.
type LowRankOptions struct {
	// Seed draws the Gaussian test matrix Ω [in, k], k = min(r+p, out, in):
	// rand.New(rand.NewPCG(Seed, 0x4C4F5752414E4B)).NormFloat64(), filled
	// row by row (Ω[j][c] is value j·k + c).
	Seed uint64
	// Oversample is p, the extra columns of Ω (0: 10; negative: none).
	Oversample int
	// PowerIters is q, the subspace iterations (0: 2; negative: none).
	PowerIters int
	// Hessian, if not nil, is H [in][in] row-major (symmetric positive
	// semi-definite, e.g. XᵀX/N from calibration; only the diagonal and
	// the lower triangle are read), and LowRank minimizes the H-weighted
	// error instead of the plain one (--lowrank-weighted).
	Hessian []float64
	// Damp is λ as a fraction of mean(diag H), added to the diagonal before
	// the Cholesky factorization, as GPTQ damps (0: 0.01).
	Damp float64
}

// LowRankFit is a rank-r fit E ≈ A·B in the layout lut.Parts takes
// (LowRankA, LowRankB): y = Ŵ·x + A·(B·x).
type LowRankFit struct {
	A    []uint16 // [out][Rank] fp16
	B    []uint16 // [Rank][in] fp16, rows of unit Euclidean norm (before rounding)
	Rank int      // r, or fewer in the case LowRank describes
	// Sigma are the leading singular values found, of E (of E·L when
	// weighted), largest first [Rank].
	Sigma []float64
	// Removed = ‖E·L‖²_F − ‖(E − Â·B̂)·L‖²_F ≥ 0, the squared error the
	// rounded factors take away (L = I when unweighted).
	Removed float64
}

// LowRank fits the leading rank-r part of an error matrix E = W − Ŵ
// [out, in] (docs/quantization.md §5) by a seeded randomized SVD (Halko,
// Martinsson & Tropp, "Finding structure with randomness", SIAM Review
// 2011, Algorithms 4.4 and 5.1), all in float64 with gonum:
//
//	Y = M·Ω,  Q = qr(Y)                        Ω [in, k] Gaussian, k = min(r+p, out, in)
//	repeat q times: Q = qr(M·qr(Mᵀ·Q))          subspace iteration, re-orthonormalized
//	Qᵀ·M = Ũ·Σ·Vᵀ (small SVD),  U = Q·Ũ
//	A = U_r·Σ_r  [out, r],   B = V_rᵀ  [r, in]
//
// with M = E. In exact arithmetic A·B = U_r·U_rᵀ·E, a projection of E's
// columns, so ‖E − A·B‖_F ≤ ‖E‖_F; for a spectrum decaying past r + p the
// error is close to the optimal √(Σ_{i>r} σᵢ²).
//
// Weighted (opt.Hessian set): with H + λI = L·Lᵀ (Cholesky, λ = Damp ·
// mean diag H), it minimizes ‖(E − A·B)·L‖²_F = tr((E − A·B)(H+λI)(E − A·B)ᵀ),
// the output error on the calibration inputs, by the same steps on
// M = E·L (applied as products, never formed) and B = V_rᵀ·L⁻¹ (a
// triangular solve); its rows are then scaled to unit norm and A's columns
// by the inverse, so that in both variants B's rows have unit norm and A
// carries the magnitudes. The factorization costs in³/3 flops (with gonum,
// seconds at in = 5120 but minutes at in = 17408); the rest about
// (2q+3)·2·out·in·k flops.
//
// A and B are rounded to fp16 through float32; a value beyond the fp16
// range is an error wrapping ErrInput. Rounding can in principle undo the
// gain of tiny components (values in the fp16 subnormal range): LowRank
// measures the rounded fit exactly and, if the full rank would fit E worse
// than no correction at all, keeps the prefix of components with the
// smallest error instead (possibly none); trailing components whose A
// column rounds to zero are dropped as well. So the correction never
// increases the error it fits, and Removed says by how much it decreases it.
//
// r = 0 gives an empty fit; r < 0 or r > min(out, in), a Hessian of the
// wrong size, non-finite values or a Hessian that is not positive definite
// after damping are errors wrapping ErrInput. The result depends only on E,
// r and opt (not on GOMAXPROCS).
func LowRank(e *tensor.Matrix, r int, opt LowRankOptions) (LowRankFit, error) {
	m, n := e.Rows, e.Cols
	if r < 0 || r > min(m, n) {
		return LowRankFit{}, fmt.Errorf("quant: LowRank %dx%d: %w: rank %d", m, n, ErrInput, r)
	}
	for i, v := range e.Data[:m*n] {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return LowRankFit{}, fmt.Errorf("quant: LowRank %dx%d: %w: E[%d][%d] = %v", m, n, ErrInput, i/n, i%n, v)
		}
	}
	if r == 0 {
		return LowRankFit{}, nil
	}
	lr, err := newLowRankOp(e, opt)
	if err != nil {
		return LowRankFit{}, fmt.Errorf("quant: LowRank %dx%d: %w", m, n, err)
	}
	a, b, sigma := lr.fit(r, opt)
	fit, err := lr.round(a, b, r)
	if err != nil {
		return LowRankFit{}, fmt.Errorf("quant: LowRank %dx%d rank %d: %w", m, n, r, err)
	}
	fit.Sigma = sigma[:fit.Rank]
	return fit, nil
}

// lowRankOp applies M = E·L and Mᵀ as products with E [m, n], widened to
// float64 one panel of rows at a time (never held whole in float64).
type lowRankOp struct {
	e     *tensor.Matrix    // [m, n]
	m, n  int               // E's shape
	l     blas64.Triangular // [n, n] lower Cholesky factor of H + λI; N = 0: L = I
	panel []float64         // [lowRankPanel][n] scratch
}

// newLowRankOp validates the options and factors H + λI when weighted.
func newLowRankOp(e *tensor.Matrix, opt LowRankOptions) (*lowRankOp, error) {
	n := e.Cols
	op := &lowRankOp{e: e, m: e.Rows, n: n, panel: make([]float64, min(lowRankPanel, e.Rows)*n)}
	if opt.Hessian == nil {
		return op, nil
	}
	if len(opt.Hessian) != n*n {
		return nil, fmt.Errorf("%w: Hessian has %d values, want %d·%d", ErrInput, len(opt.Hessian), n, n)
	}
	damp := opt.Damp
	if damp == 0 {
		damp = 0.01
	}
	if damp < 0 || math.IsNaN(damp) {
		return nil, fmt.Errorf("%w: damping %v", ErrInput, damp)
	}
	h := append([]float64(nil), opt.Hessian...) // [n][n]; Potrf overwrites the lower triangle with L
	var mean float64
	for j := range n {
		for _, v := range h[j*n : j*n+j+1] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: Hessian row %d is not finite", ErrInput, j)
			}
		}
		mean += h[j*n+j] / float64(n)
	}
	lambda := damp * mean
	for j := range n {
		h[j*n+j] += lambda
	}
	l, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: h, Uplo: blas.Lower})
	if !ok {
		return nil, fmt.Errorf("%w: Hessian + %.3g·I is not positive definite", ErrInput, lambda)
	}
	l.Diag = blas.NonUnit
	op.l = l
	return op, nil
}

// weighted reports whether L ≠ I.
func (op *lowRankOp) weighted() bool { return op.l.N > 0 }

// mulE sets y = E·x for x [n, k] and y [m, k].
func (op *lowRankOp) mulE(y, x []float64, k int) {
	for o0 := 0; o0 < op.m; o0 += lowRankPanel {
		p := op.widen(o0)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, lrGeneral(p, op.n, op.panel), lrGeneral(op.n, k, x), 0, lrGeneral(p, k, y[o0*k:]))
	}
}

// tmulE sets zt = Qᵀ·E [k, n] for qt = Qᵀ [k, m], summing the panels in
// order.
func (op *lowRankOp) tmulE(zt, qt []float64, k int) {
	for o0 := 0; o0 < op.m; o0 += lowRankPanel {
		p := op.widen(o0)
		q := blas64.General{Rows: k, Cols: p, Stride: op.m, Data: qt[o0:]}
		beta := 1.0 // accumulate onto the earlier panels
		if o0 == 0 {
			beta = 0
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, q, lrGeneral(p, op.n, op.panel), beta, lrGeneral(k, op.n, zt))
	}
}

// widen copies rows [o0, o0+p) of E into op.panel as float64 and returns p.
func (op *lowRankOp) widen(o0 int) int {
	p := min(lowRankPanel, op.m-o0)
	src := op.e.Data[o0*op.n : (o0+p)*op.n]
	dst := op.panel[:len(src)]
	tensor.Parallel(p, func(lo, hi int) {
		for i, v := range src[lo*op.n : hi*op.n] {
			dst[lo*op.n+i] = float64(v)
		}
	})
	return p
}

// mulM sets y = M·x = E·(L·x) for x [n, k] (x is left unchanged).
func (op *lowRankOp) mulM(y, x []float64, k int) {
	if op.weighted() {
		x = append([]float64(nil), x...)
		blas64.Trmm(blas.Left, blas.NoTrans, 1, op.l, lrGeneral(op.n, k, x))
	}
	op.mulE(y, x, k)
}

// tmulM sets zt = Qᵀ·M = (Qᵀ·E)·L [k, n] for qt = Qᵀ [k, m].
func (op *lowRankOp) tmulM(zt, qt []float64, k int) {
	op.tmulE(zt, qt, k)
	if op.weighted() {
		blas64.Trmm(blas.Right, blas.NoTrans, 1, op.l, lrGeneral(k, op.n, zt))
	}
}

// fit runs the randomized SVD of M for rank r and returns A [m, r],
// B [r, n] (unit rows) and the r leading singular values.
func (op *lowRankOp) fit(r int, opt LowRankOptions) (a, b, sigma []float64) {
	m, n := op.m, op.n
	p, q := opt.Oversample, opt.PowerIters
	if p == 0 {
		p = 10
	}
	if q == 0 {
		q = 2
	}
	k := min(r+max(p, 0), m, n)

	g := rand.New(rand.NewPCG(opt.Seed, lowRankStream))
	omega := make([]float64, n*k) // [n][k]
	for i := range omega {
		omega[i] = g.NormFloat64()
	}
	y := make([]float64, m*k)  // [m][k]
	qt := make([]float64, k*m) // [k][m] = Qᵀ
	zt := make([]float64, k*n) // [k][n]
	z := make([]float64, n*k)  // [n][k]
	op.mulM(y, omega, k)
	lrOrthonormalize(y, m, k)
	lrTranspose(qt, y, m, k)
	for range max(q, 0) {
		op.tmulM(zt, qt, k)
		lrTranspose(z, zt, k, n)
		lrOrthonormalize(z, n, k)
		op.mulM(y, z, k)
		lrOrthonormalize(y, m, k)
		lrTranspose(qt, y, m, k)
	}
	op.tmulM(zt, qt, k) // Qᵀ·M [k, n]

	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(k, n, zt), mat.SVDThin) {
		// Dgesvd does not converge only on non-finite input, which the
		// checks above exclude.
		panic("quant.LowRank: SVD did not converge")
	}
	var uc, vc mat.Dense // [k][k], [n][k]
	svd.UTo(&uc)
	svd.VTo(&vc)
	sigma = svd.Values(nil)[:r]

	a = make([]float64, m*r) // [m][r] = (Q·Ũ)[:, :r]·Σ_r, scaled below
	ud := uc.RawMatrix()
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, lrGeneral(m, k, y), blas64.General{Rows: k, Cols: r, Stride: ud.Stride, Data: ud.Data}, 0, lrGeneral(m, r, a))
	b = make([]float64, r*n) // [r][n] = V_rᵀ (·L⁻¹)
	vd := vc.RawMatrix()
	for c := range r {
		for j := range n {
			b[c*n+j] = vd.Data[j*vd.Stride+c]
		}
	}
	norms := make([]float64, r)
	for c := range norms {
		norms[c] = 1
	}
	if op.weighted() {
		blas64.Trsm(blas.Right, blas.NoTrans, 1, op.l, lrGeneral(r, n, b)) // B·L = V_rᵀ
		for c := range r {
			norms[c] = blas64.Nrm2(blas64.Vector{N: n, Inc: 1, Data: b[c*n:]})
			blas64.Scal(1/norms[c], blas64.Vector{N: n, Inc: 1, Data: b[c*n:]})
		}
	}
	for o := range m {
		for c := range r {
			a[o*r+c] *= sigma[c] * norms[c]
		}
	}
	return a, b, sigma
}

// round rounds A [m, r] and B [r, n] to fp16 and measures the rounded
// fit's change of the (weighted) squared error for every prefix of
// components,
//
//	Δ(s) = ‖Â_s·B̂_s·L‖² − 2⟨E·L, Â_s·B̂_s·L⟩ = Σ_{c,c'<s} (ÂᵀÂ)_{cc'}·(B̂·L·Lᵀ·B̂ᵀ)_{cc'} − 2 Σ_{c<s} Â_cᵀ·(E·L·Lᵀ·B̂ᵀ)_c,
//
// keeping all r components when Δ(r) ≤ 0 and otherwise the prefix with
// the smallest Δ.
func (op *lowRankOp) round(a, b []float64, r int) (LowRankFit, error) {
	m, n := op.m, op.n
	fa, fb := make([]uint16, m*r), make([]uint16, r*n)
	ah, bh := make([]float64, m*r), make([]float64, r*n) // Â, B̂
	for _, f := range []struct {
		name string
		src  []float64
		dst  []uint16
		back []float64
		cols int
	}{{"A", a, fa, ah, r}, {"B", b, fb, bh, n}} {
		for i, v := range f.src {
			f.dst[i] = tensor.F32ToF16(float32(v))
			f.back[i] = float64(tensor.F16ToF32(f.dst[i]))
			if math.IsInf(f.back[i], 0) {
				return LowRankFit{}, fmt.Errorf("%w: %s[%d][%d] = %.4g overflows fp16", ErrInput, f.name, i/f.cols, i%f.cols, v)
			}
		}
	}
	hbt := append([]float64(nil), bh...) // [r][n] B̂·L·Lᵀ
	gramB := make([]float64, r*r)        // [r][r] B̂·L·Lᵀ·B̂ᵀ
	if op.weighted() {
		blas64.Trmm(blas.Right, blas.NoTrans, 1, op.l, lrGeneral(r, n, hbt)) // B̂·L
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, lrGeneral(r, n, hbt), lrGeneral(r, n, hbt), 0, lrGeneral(r, r, gramB))
		blas64.Trmm(blas.Right, blas.Trans, 1, op.l, lrGeneral(r, n, hbt)) // ·Lᵀ
	} else {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, lrGeneral(r, n, bh), lrGeneral(r, n, bh), 0, lrGeneral(r, r, gramB))
	}
	hb := make([]float64, n*r) // [n][r]
	lrTranspose(hb, hbt, r, n)
	g := make([]float64, m*r) // [m][r] E·L·Lᵀ·B̂ᵀ
	op.mulE(g, hb, r)
	gramA := make([]float64, r*r) // [r][r] ÂᵀÂ
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, lrGeneral(m, r, ah), lrGeneral(m, r, ah), 0, lrGeneral(r, r, gramA))

	delta := make([]float64, r+1) // Δ(s) for s = 0 … r
	for s := 1; s <= r; s++ {
		c := s - 1
		d := gramA[c*r+c] * gramB[c*r+c]
		for c2 := range c {
			d += 2 * gramA[c*r+c2] * gramB[c*r+c2]
		}
		for o := range m {
			d -= 2 * ah[o*r+c] * g[o*r+c]
		}
		delta[s] = delta[s-1] + d
	}
	keep := r
	if delta[r] > 0 {
		for s := range delta {
			if delta[s] < delta[keep] {
				keep = s
			}
		}
	}
	for keep > 0 && lrAllZero(fa, keep-1, r) { // rounded to nothing: no use storing it
		keep--
	}
	fit := LowRankFit{Rank: keep, Removed: -delta[keep]}
	if keep == 0 {
		return fit, nil
	}
	fit.A, fit.B = fa, fb[:keep*n]
	if keep < r {
		fit.A = make([]uint16, m*keep)
		for o := range m {
			copy(fit.A[o*keep:(o+1)*keep], fa[o*r:])
		}
	}
	return fit, nil
}

// lrAllZero reports whether column c of a [rows][r] fp16 matrix is ±0.
func lrAllZero(a []uint16, c, r int) bool {
	for i := c; i < len(a); i += r {
		if a[i]&0x7fff != 0 {
			return false
		}
	}
	return true
}

// lrGeneral wraps data as a dense row-major rows×cols blas64 matrix.
func lrGeneral(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// lrTranspose sets dst [cols][rows] = srcᵀ for src [rows][cols].
func lrTranspose(dst, src []float64, rows, cols int) {
	for i := range rows {
		for j, v := range src[i*cols : (i+1)*cols] {
			dst[j*rows+i] = v
		}
	}
}

// lrOrthonormalize replaces a [rows][k] (rows ≥ k) with the thin Q of its
// Householder QR factorization (LAPACK dgeqrf + dorgqr): k orthonormal
// columns spanning a's column space (when a has full rank).
func lrOrthonormalize(a []float64, rows, k int) {
	ga := lrGeneral(rows, k, a)
	tau := make([]float64, k)
	work := []float64{0}
	lapack64.Geqrf(ga, tau, work, -1)
	lw := int(work[0])
	lapack64.Orgqr(ga, tau, work, -1)
	lw = max(lw, int(work[0]), 1)
	work = make([]float64, lw)
	lapack64.Geqrf(ga, tau, work, lw)
	lapack64.Orgqr(ga, tau, work, lw)
}
