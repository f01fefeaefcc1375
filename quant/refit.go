package quant

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"forge/lut"
	"forge/tensor"
)

// RefitOptions tune Refit; the zero value is the default.
type RefitOptions struct {
	// Iters is the number of alternations of the scale step and the
	// codebook step before the fp16 rounding (0: 2; on GPTQ and RTN results
	// the second adds ≤ 0.001 dB of output SNR, a third nothing measurable).
	Iters int
	// Context, if set, stops the work (between passes over H and between
	// row batches) with its error once it is done.
	Context context.Context
}

func (o RefitOptions) iters() int { return pick(o.Iters, 2) }

func (o RefitOptions) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

// RefitReport says what Refit did. Errors are E = Σ_o (w_o − ŵ_o)ᵀ H (w_o −
// ŵ_o) in float64, with the fp16 values a matrix stores.
type RefitReport struct {
	Signal  float64 // Σ_o w_oᵀ H w_o = tr(W H Wᵀ)
	Before  float64 // E of the matrix given
	After   float64 // E of the refit codebooks and scales, rounded to fp16 (applied or not)
	Iters   int     // alternations run (0 for INT8, which has the scale step only, and bf16/fp16)
	Applied bool    // After < Before: the matrix returned carries the refit values
}

// SNRBefore is the output SNR of the matrix given on H, 10·log10(Signal /
// Before) dB (OutputSNR's definition; +Inf when Before ≤ 0).
func (r RefitReport) SNRBefore() float64 { return refitSNR(r.Signal, r.Before) }

// SNRAfter is 10·log10(Signal / After) dB, the refit values' output SNR.
func (r RefitReport) SNRAfter() float64 { return refitSNR(r.Signal, r.After) }

func refitSNR(sig, e float64) float64 {
	if e <= 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/e)
}

// Refit keeps the indices of a quantized matrix m and refits its codebooks
// and per-channel scales to the calibration statistics h (H = XᵀX/N, the
// training Hessian GPTQ used), minimizing the output error
//
//	E(c, s) = Σ_o (w_o − ŵ_o)ᵀ H (w_o − ŵ_o),   ŵ_o[j] = s_o · c_g(o)[code(o,j)][o mod d]
//
// (‖X(W − Ŵ)ᵀ‖²/N; docs/quantization.md §3; issue 17). W [out, in] is the
// target in the basis m is stored in: when m will carry a rotation, pass
// W' = W·M (Rotated) and the Hessian of x' = x·M, and attach the rotation
// (and any low-rank correction, fit to the refit matrix) afterwards; m
// itself must carry neither. E is quadratic in c for fixed s and in s for
// fixed c, so Refit alternates the two exact block minimizations:
//
//   - scale step (c fixed), one division per row: with u_o the unscaled
//     row (u_o[j] = c_g(o)[code(o,j)][o mod d]), s_o = u_oᵀHw_o / u_oᵀHu_o;
//     the old scale is kept when that is not positive and finite (scales
//     stay positive, as RTN makes them);
//   - codebook step (s fixed): for each codebook group g and vector
//     component t < d, the K values c_{g,·,t} solve the normal equations
//     A·c = y, A = Σ_o s_o² G_r(o), y = Σ_o s_o b_o, over the rows o of
//     group g with o mod d = t, where r(o) = ⌊o/d⌋ is o's index row,
//     G_r = E_rᵀHE_r [K][K] (G_r[a][b] = Σ_{j,k: code(r,j) = a, code(r,k) = b} H[j][k])
//     and b_o = E_rᵀHw_o (E_r [in][K] the one-hot matrix of row r's codes).
//     The system is solved by Cholesky in float64 with a ridge towards the
//     old values, (A + εD)c = y + εD·c_old, D = diag(A), ε = 10⁻¹⁰; an
//     entry no row uses (a zero row and column of A) keeps its value.
//
// Each of opt.Iters alternations is a scale step then a codebook step
// (the scales of RTN and GPTQ are √mean W², not fit to the codebook, so
// the scales go first); then the codebooks are rounded to fp16 and a last
// scale step, against the rounded codebooks, picks each row's fp16 scale:
// the nearest fp16 to its optimum (which is the best fp16 value, E_o being
// a parabola in s_o), or its current or original value if either is
// better or the optimum is not usable (zero or infinite in fp16, not
// positive). INT8 has a fixed integer codebook: only that scale step. BF16
// and FP16 have nothing to refit: m is returned as it is.
//
// Every statistic is exact in float64, over all rows (no sampling). The
// indices being fixed, G_r, b_o and w_oᵀHw_o are computed once, by one
// stream over H's strict upper triangle in column tiles that a batch of
// rows shares (gramBatch): rows of H are added into [K][tile] panels by
// code for G_r ((out/d)·in²/2 additions) and, scaled by w_o[j], into a
// panel per output row for b_o and w_oᵀHw_o (out·in²/2 multiply-adds).
// E is then Σ_o w_oᵀHw_o − 2s_o·c_tᵀb_o + s_o²·c_tᵀG_rc_t, and each step
// costs O(out·K²). The G_r take (out/d)·K²·8 bytes; past 256 MiB (LUT6,
// LUT8 and 256-entry vector codebooks on large matrices) each of the
// opt.Iters + 1 sweeps recomputes them, a chunk of rows at a time. INT8's
// w_oᵀHw_o, c_oᵀHw_o and c_oᵀHc_o come from the same kind of stream
// (out·in² multiply-adds). Times: BenchmarkRefit (2048×5632: 11–15 s on
// two cores).
//
// The result keeps m's format, shape and Index array (shared, not copied)
// with new LUT and Scale arrays; m is never modified. If the refit values
// do not lower E, m itself is returned (RefitReport.Applied false). The
// result depends only on the inputs (sums in a fixed order, not on
// GOMAXPROCS). Errors wrap ErrInput for a shape mismatch, a non-finite
// weight, a nil, empty, DiagOnly, non-finite or mis-sized Hessian, a
// negative Iters, and an m with a rotation or low-rank factors; or they
// are the context's.
func Refit(w *tensor.Matrix, m *lut.Matrix, h *Hessian, opt RefitOptions) (*lut.Matrix, RefitReport, error) {
	r, rep, err := refit(w, m, h, opt)
	if err != nil {
		out, in := m.Dims()
		return nil, RefitReport{}, fmt.Errorf("quant: Refit %s %dx%d: %w", m.Format(), out, in, err)
	}
	return r, rep, nil
}

func refit(w *tensor.Matrix, m *lut.Matrix, h *Hessian, opt RefitOptions) (*lut.Matrix, RefitReport, error) {
	if err := refitCheck(w, m, opt); err != nil {
		return nil, RefitReport{}, err
	}
	if !m.Format().Quantized() {
		return m, RefitReport{}, nil
	}
	if err := checkWeights(w); err != nil {
		return nil, RefitReport{}, err
	}
	hm, err := refitHessian(h, w.Cols)
	if err != nil {
		return nil, RefitReport{}, err
	}
	ctx := opt.context()
	if m.Format().Kind == lut.Int8 {
		return refitInt8(ctx, w, m, hm)
	}
	rf, err := newRefitter(ctx, w, m, hm)
	if err != nil {
		return nil, RefitReport{}, err
	}
	book, scale, rep, err := rf.run(ctx, opt.iters())
	if err != nil {
		return nil, RefitReport{}, err
	}
	if !(rep.After < rep.Before) {
		return m, rep, nil
	}
	out, in := m.Dims()
	r, err := lut.New(m.Format(), out, in, lut.Parts{LUT: book, Index: m.Parts().Index, Scale: scale})
	if err != nil {
		return nil, RefitReport{}, err
	}
	rep.Applied = true
	return r, rep, nil
}

// refitCheck validates the shapes, the options and m's extras.
func refitCheck(w *tensor.Matrix, m *lut.Matrix, opt RefitOptions) error {
	out, in := m.Dims()
	p := m.Parts()
	switch {
	case w.Rows != out || w.Cols != in:
		return fmt.Errorf("%w: W is %dx%d", ErrInput, w.Rows, w.Cols)
	case opt.Iters < 0:
		return fmt.Errorf("%w: Iters = %d", ErrInput, opt.Iters)
	case m.Rank() > 0:
		return fmt.Errorf("%w: the matrix has low-rank factors (rank %d): refit before attaching them", ErrInput, m.Rank())
	case p.Rotation != nil:
		return fmt.Errorf("%w: the matrix carries a rotation: refit the rotated weights before attaching it", ErrInput)
	}
	return nil
}

// refitHessian returns H [in][in] from h, checked.
func refitHessian(h *Hessian, in int) ([]float64, error) {
	switch {
	case h == nil || h.Rows() == 0:
		return nil, fmt.Errorf("%w: no Hessian statistics", ErrInput)
	case h.dim() != in:
		return nil, fmt.Errorf("%w: Hessian of %d inputs for %d input columns", ErrInput, h.dim(), in)
	case !h.full():
		return nil, fmt.Errorf("%w: the Hessian was accumulated DiagOnly; Refit needs the full matrix", ErrInput)
	}
	hm := h.Matrix()
	for i, v := range hm {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: H[%d][%d] = %v", ErrInput, i/in, i%in, v)
		}
	}
	return hm, nil
}

// refitGramBytes bounds the memory the Gram matrices G_r are kept in
// between passes; past it they are recomputed by each pass.
const refitGramBytes = 256 << 20

// refitter holds one matrix's fixed statistics and its current float64
// codebooks and scales.
type refitter struct {
	out, in, d, k    int
	rows, rowsG      int // index rows (out/d), index rows per codebook group
	codes            []uint8
	h                []float64 // [in][in] H
	w                *tensor.Matrix
	wHw              []float64 // [out] w_oᵀHw_o
	b                []float64 // [out][K] b_o = E_rᵀHw_o
	gram             []float64 // [rows][K][K] G_r, all rows; nil: recomputed by each pass
	chunk            int       // index rows per pass chunk when gram is nil
	tile, batch      int       // grams: columns per tile, rows per batch
	c                []float64 // [groups][K][d] codebooks
	s                []float64 // [out] scales
	oldLUT, oldScale []uint16  // m's arrays (read only)
}

// newRefitter computes the statistics of W and m's codes under H.
func newRefitter(ctx context.Context, w *tensor.Matrix, m *lut.Matrix, hm []float64) (*refitter, error) {
	f := m.Format()
	out, in := m.Dims()
	p := m.Parts()
	rf := &refitter{
		out: out, in: in, d: f.Dim, k: f.Entries(),
		rows: f.IndexRows(out), h: hm, w: w,
		oldLUT: p.LUT, oldScale: p.Scale,
	}
	rf.rowsG = rf.rows
	if f.Group > 0 {
		rf.rowsG = f.Group / f.Dim
	}
	rf.codes = make([]uint8, rf.rows*in)
	m.Codes(rf.codes)
	rf.c = make([]float64, len(p.LUT))
	for i, v := range p.LUT {
		rf.c[i] = float64(tensor.F16ToF32(v))
	}
	rf.s = make([]float64, out)
	for o, v := range p.Scale {
		rf.s[o] = float64(tensor.F16ToF32(v))
	}
	rf.tile, rf.batch = gramTiling(rf.k, rf.d)
	kk := rf.k * rf.k
	rf.chunk = max(1, refitGramBytes/(8*kk))
	rf.wHw, rf.b = make([]float64, out), make([]float64, out*rf.k)
	if rf.rows <= rf.chunk {
		rf.gram = make([]float64, rf.rows*kk)
		if err := rf.grams(ctx, rf.gram, 0, rf.rows, true); err != nil {
			return nil, err
		}
		return rf, nil
	}
	buf := make([]float64, rf.chunk*kk) // the statistics only; passes recompute G_r
	for r0 := 0; r0 < rf.rows; r0 += rf.chunk {
		r1 := min(r0+rf.chunk, rf.rows)
		if err := rf.grams(ctx, buf[:(r1-r0)*kk], r0, r1, true); err != nil {
			return nil, err
		}
	}
	return rf, nil
}

// run alternates iters sweeps of the scale and codebook steps, rounds
// the codebooks and picks the fp16 scales (Refit's steps), and returns
// the rounded arrays with the report (Applied not set).
func (rf *refitter) run(ctx context.Context, iters int) (book, scale []uint16, rep RefitReport, err error) {
	rep = RefitReport{Signal: rf.signal(), Iters: iters}
	for it := range iters {
		e, _, err := rf.sweep(ctx, sweepScale|sweepBook)
		if err != nil {
			return nil, nil, RefitReport{}, err
		}
		if it == 0 {
			rep.Before = e
		}
	}
	book = rf.roundBook()
	var before float64
	if before, rep.After, err = rf.sweep(ctx, sweepScale|sweepRound); err != nil {
		return nil, nil, RefitReport{}, err
	}
	if iters == 0 {
		rep.Before = before // the codebooks are m's: E on entry is m's
	}
	scale = make([]uint16, rf.out)
	for o, v := range rf.s {
		scale[o] = toF16(v) // exact: the last sweep leaves fp16 values
	}
	return book, scale, rep, nil
}

// sweepMode says what one sweep does.
type sweepMode uint8

const (
	sweepScale sweepMode = 1 << iota // the scale step
	sweepRound                       // … choosing fp16 scales
	sweepBook                        // then the codebook step
)

// sweep is one pass over the Gram matrices. For every output row o it
// takes n_o = c_tᵀb_o and q_o = c_tᵀG_rc_t (c_t the current codebook's
// component t = o mod d of o's group) and sums E_o = w_oᵀHw_o − 2s_o·n_o +
// s_o²·q_o at the scales on entry (before). With sweepScale it then sets
// s_o to the scale step's value (sweepRound: the best fp16 candidate,
// scaleFP16) and sums E at the new scales (after; = before otherwise).
// With sweepBook it accumulates the codebook step's normal equations with
// the new scales, and solves them once the pass is done.
func (rf *refitter) sweep(ctx context.Context, mode sweepMode) (before, after float64, err error) {
	k, d := rf.k, rf.d
	groups := rf.rows / rf.rowsG
	if rf.rows%rf.rowsG != 0 {
		groups++
	}
	ct := make([]float64, groups*d*k) // [groups][d][K] codebooks, transposed
	for g := range groups {
		for a := range k {
			for t := range d {
				ct[(g*d+t)*k+a] = rf.c[(g*k+a)*d+t]
			}
		}
	}
	eb, ea := make([]float64, rf.out), make([]float64, rf.out)
	var sys []float64 // [groups·d][K][K+1]: A | y of each (group, component)
	if mode&sweepBook != 0 {
		sys = make([]float64, groups*d*k*(k+1))
	}
	err = rf.pass(ctx, func(r0, r1 int, g []float64) {
		parallel(r1-r0, max(1, 1<<12/(k*k*d)), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				rf.scaleRow(mode, r0+i, g[i*k*k:(i+1)*k*k], ct, eb, ea)
			}
		})
		if sys != nil {
			rf.accumulate(sys, r0, r1, g)
		}
	})
	if err != nil {
		return 0, 0, err
	}
	for o := range rf.out { // in row order
		before += eb[o]
		after += ea[o]
	}
	if sys != nil {
		rf.solve(sys)
	}
	return before, after, nil
}

// scaleRow is sweep's work on the d output rows of index row r with Gram
// matrix gr [K][K].
func (rf *refitter) scaleRow(mode sweepMode, r int, gr, ct, eb, ea []float64) {
	k, d := rf.k, rf.d
	grp := r / rf.rowsG
	for t := range d {
		o := r*d + t
		c := ct[(grp*d+t)*k : (grp*d+t+1)*k]
		var n, q float64
		for a, ca := range c {
			n += ca * rf.b[o*k+a]
			var x float64
			for b, cb := range c {
				x += gr[a*k+b] * cb
			}
			q += ca * x
		}
		s := rf.s[o]
		eb[o] = rf.wHw[o] - 2*s*n + s*s*q
		switch {
		case mode&sweepRound != 0:
			s = scaleFP16(n, q, s, rf.oldScale[o])
		case mode&sweepScale != 0 && q > 0:
			if v := n / q; v > 0 && !math.IsInf(v, 0) {
				s = v
			}
		}
		rf.s[o] = s
		ea[o] = rf.wHw[o] - 2*s*n + s*s*q
	}
}

// scaleFP16 returns the fp16-representable scale (widened) with the least
// row error E(s) = const − 2s·n + s²·q among the nearest fp16 to the
// optimum n/q, the current scale cur and the original fp16 scale old
// (ties: old, then cur); a candidate that is not positive and finite in
// fp16 is skipped.
func scaleFP16(n, q, cur float64, old uint16) float64 {
	e := func(s float64) float64 { return s*s*q - 2*s*n }
	best := float64(tensor.F16ToF32(old))
	be := e(best)
	try := func(v float64) {
		h := toF16(v)
		if h&0x7fff == 0 || h&0x7c00 == 0x7c00 || h&0x8000 != 0 {
			return
		}
		x := float64(tensor.F16ToF32(h))
		if ex := e(x); ex < be {
			best, be = x, ex
		}
	}
	try(cur)
	if q > 0 {
		try(n / q)
	}
	return best
}

// accumulate adds the rows [r0, r1) (Gram matrices g) into the codebook
// step's systems: A_{g,t} += s_o²·G_r, y_{g,t} += s_o·b_o for o = d·r + t.
// Each entry sums its rows in row order (the work is split by entry).
func (rf *refitter) accumulate(sys []float64, r0, r1 int, g []float64) {
	k, d := rf.k, rf.d
	groups := len(sys) / (d * k * (k + 1))
	parallel(groups*d*k, max(1, 1<<14/max(1, (r1-r0)*k)), func(lo, hi int) {
		for task := lo; task < hi; task++ {
			st, a := task/k, task%k // system (group·d + t), row of A
			grp, t := st/d, st%d
			row := sys[(st*k+a)*(k+1) : (st*k+a+1)*(k+1)] // A[a][:] | y[a]
			for r := max(r0, grp*rf.rowsG); r < min(r1, (grp+1)*rf.rowsG); r++ {
				o := r*d + t
				s := rf.s[o]
				s2 := s * s
				gr := g[(r-r0)*k*k+a*k : (r-r0)*k*k+(a+1)*k]
				for b, v := range gr {
					row[b] += s2 * v
				}
				row[k] += s * rf.b[o*k+a]
			}
		}
	})
}

// refitRidge is ε, the codebook step's ridge relative to each diagonal
// entry of A: small against any change that matters, large against the
// rounding of A (10⁻¹⁶ of its sums), and it bounds the condition number of
// the Jacobi-scaled system by K/ε.
const refitRidge = 1e-10

// solve solves every codebook system (A + εD)c = y + εD·c_old, D = diag(A),
// in place and stores the solutions in rf.c: a ridge towards the old
// values scaled like each entry's own curvature. An entry with A_aa = 0
// has a zero row and column (A is positive semi-definite): no row uses it,
// or only on inputs H gives no weight, and it keeps its value. A system
// whose factorization fails or whose solution is not finite keeps its old
// values.
func (rf *refitter) solve(sys []float64) {
	k, d := rf.k, rf.d
	n := len(sys) / (k * (k + 1))
	parallel(n, 1, func(lo, hi int) {
		a := make([]float64, k*k)
		x := make([]float64, k)
		for st := lo; st < hi; st++ {
			grp, t := st/d, st%d
			m := sys[st*k*(k+1) : (st+1)*k*(k+1)]
			for i := range k {
				copy(a[i*k:(i+1)*k], m[i*(k+1):i*(k+1)+k])
				old, aii := rf.c[(grp*k+i)*d+t], a[i*k+i]
				if aii > 0 {
					a[i*k+i] += refitRidge * aii
					x[i] = m[i*(k+1)+k] + refitRidge*aii*old
				} else { // an unused entry: c_i = old
					a[i*k+i], x[i] = 1, old
				}
			}
			if !cholSolve(a, x, k) {
				continue
			}
			for i, v := range x {
				rf.c[(grp*k+i)*d+t] = v
			}
		}
	})
}

// cholSolve solves a·x = b for a symmetric positive definite a [n][n]
// (overwritten by its Cholesky factor), b given in x. It reports false,
// leaving x undefined, when a is not positive definite or the solution is
// not finite.
func cholSolve(a, x []float64, n int) bool {
	for j := range n {
		s := a[j*n+j]
		for l := range j {
			s -= a[j*n+l] * a[j*n+l]
		}
		if !(s > 0) {
			return false
		}
		djj := math.Sqrt(s)
		a[j*n+j] = djj
		for i := j + 1; i < n; i++ {
			v := a[i*n+j]
			for l := range j {
				v -= a[i*n+l] * a[j*n+l]
			}
			a[i*n+j] = v / djj
		}
	}
	for i := range n { // L·z = b
		v := x[i]
		for l := range i {
			v -= a[i*n+l] * x[l]
		}
		x[i] = v / a[i*n+i]
	}
	for i := n - 1; i >= 0; i-- { // Lᵀ·x = z
		v := x[i]
		for l := i + 1; l < n; l++ {
			v -= a[l*n+i] * x[l]
		}
		x[i] = v / a[i*n+i]
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// roundBook rounds the codebooks to fp16 (an entry beyond the fp16 range
// keeps m's value), sets rf.c to the rounded values and returns them as a
// new LUT array.
func (rf *refitter) roundBook() []uint16 {
	book := make([]uint16, len(rf.c))
	for i, v := range rf.c {
		h := toF16(v)
		if h&0x7c00 == 0x7c00 {
			h = rf.oldLUT[i]
		}
		book[i] = h
		rf.c[i] = float64(tensor.F16ToF32(h))
	}
	return book
}

// refitInt8 is Refit for INT8 per-channel: the codes c[o,j] are the fixed
// codebook, so only the scale step runs, in one pass: from the rows of
// [W; C]·H (float64 GEMM), w_oᵀHw_o, n_o = c_oᵀHw_o and q_o = c_oᵀHc_o,
// then each row's fp16 scale (scaleFP16).
func refitInt8(ctx context.Context, w *tensor.Matrix, m *lut.Matrix, hm []float64) (*lut.Matrix, RefitReport, error) {
	wHw, n, q, err := int8Stats(ctx, w, m, hm)
	if err != nil {
		return nil, RefitReport{}, err
	}
	old := m.Parts().Scale
	scale := make([]uint16, len(old))
	var rep RefitReport
	for o, so := range old { // in row order
		s := float64(tensor.F16ToF32(so))
		rep.Signal += wHw[o]
		rep.Before += wHw[o] - 2*s*n[o] + s*s*q[o]
		s = scaleFP16(n[o], q[o], s, so)
		scale[o] = toF16(s)
		rep.After += wHw[o] - 2*s*n[o] + s*s*q[o]
	}
	if !(rep.After < rep.Before) {
		return m, rep, nil
	}
	out, in := m.Dims()
	r, err := lut.New(m.Format(), out, in, lut.Parts{Index: m.Parts().Index, Scale: scale})
	if err != nil {
		return nil, RefitReport{}, err
	}
	rep.Applied = true
	return r, rep, nil
}

// int8Stats returns, per row o of an INT8 matrix with codes c_o, w_oᵀHw_o,
// n_o = c_oᵀHw_o and q_o = c_oᵀHc_o, streaming H's strict upper triangle
// as gramBatch does: with V_x[k] = Σ_{j<k} x[j]·H[j][k] for x = w_o, c_o,
// w_oᵀHw_o = Σ_j H[j][j]·w_o[j]² + 2·w_oᵀV_w, q_o likewise and n_o =
// Σ_j H[j][j]·c_o[j]·w_o[j] + c_oᵀV_w + w_oᵀV_c (out·in² multiply-adds;
// rows in parallel batches, each row's sums in a fixed order).
func int8Stats(ctx context.Context, w *tensor.Matrix, m *lut.Matrix, hm []float64) (wHw, n, q []float64, err error) {
	out, in := m.Dims()
	tile, batch := gramTiling(0, 2)
	wHw, n, q = make([]float64, out), make([]float64, out), make([]float64, out)
	parallel((out+batch-1)/batch, 1, func(lo, hi int) {
		p := make([]float64, batch*2*tile) // [batch][w, c][tile] panels V
		x := make([]float64, batch*2*in)   // [batch][w, c][in] the rows, widened
		for bi := lo; bi < hi; bi++ {
			if ctx.Err() != nil {
				return
			}
			o0 := bi * batch
			int8Batch(w, m.Parts().Index, hm, p, x, o0, min(o0+batch, out), tile, wHw, n, q)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	return wHw, n, q, nil
}

// int8Batch is int8Stats for the rows [o0, o1).
func int8Batch(w *tensor.Matrix, codes []byte, hm, p, x []float64, o0, o1, tile int, wHw, n, q []float64) {
	in, nr := w.Cols, o1-o0
	for b := range nr {
		o := o0 + b
		widen(x[2*b*in:(2*b+1)*in], w.Row(o))
		for j, c := range codes[o*in : (o+1)*in] {
			x[(2*b+1)*in+j] = float64(int8(c))
		}
	}
	for k0 := 0; k0 < in; k0 += tile {
		k1 := min(k0+tile, in)
		tw := k1 - k0
		pp := p[:2*nr*tw]
		clear(pp)
		for j := range k1 - 1 {
			lo := max(k0, j+1)
			hr := hm[j*in+lo : j*in+k1]
			for v := range 2 * nr {
				if a := x[v*in+j]; a != 0 {
					floats.AddScaled(pp[v*tw+lo-k0:(v+1)*tw], a, hr)
				}
			}
		}
		for b := range nr {
			o := o0 + b
			ws, cs := x[2*b*in+k0:2*b*in+k1], x[(2*b+1)*in+k0:(2*b+1)*in+k1]
			vw, vc := pp[2*b*tw:(2*b+1)*tw], pp[(2*b+1)*tw:(2*b+2)*tw]
			wHw[o] += 2 * floats.Dot(ws, vw)
			q[o] += 2 * floats.Dot(cs, vc)
			n[o] += floats.Dot(cs, vw) + floats.Dot(ws, vc)
		}
	}
	for b := range nr {
		o := o0 + b
		ws, cs := x[2*b*in:(2*b+1)*in], x[(2*b+1)*in:(2*b+2)*in]
		for j := range in {
			hjj := hm[j*in+j]
			wHw[o] += hjj * ws[j] * ws[j]
			q[o] += hjj * cs[j] * cs[j]
			n[o] += hjj * cs[j] * ws[j]
		}
	}
}
