package quant

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"forge/lut"
	"forge/tensor"
)

// GPTQ quantizes with GPTQ on the grid of Format (Frantar et al. 2022,
// "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained
// Transformers", Algorithm 1; docs/quantization.md §3): it minimizes
// ‖X(W − Q)ᵀ‖² for H = XᵀX/N by rounding one input column at a time and
// moving each column's rounding error onto the columns not yet rounded,
// weighted by the inverse Hessian. The zero value (past Format) is the
// reference setting: 1% damping, blocks of 128 columns.
//
// The grid is exactly RTN's for the same Options (Nearest, RTN): the same
// per-output-channel scales from the original W and the same codebooks
// (fit to W/s, weighted by diag(H) with AW), so GPTQ only chooses
// different codes; with a diagonal H it chooses RTN's codes exactly. The
// steps, with n = in:
//
//  1. Order the columns by descending diag(H) (stable: ties keep their
//     order). Dead columns (H_jj = 0: the input was always zero) get
//     H_jj = 1, as in the reference; their off-diagonal entries are zero,
//     so they neither give nor take error and round to nearest. Unlike the
//     reference, their weights are kept, not zeroed: an input the
//     calibration never saw active keeps its RTN-rounded weights.
//  2. Damp: H += λI with λ = Damp·mean(diag H) (diagonal before step 1).
//  3. In float64, the upper Cholesky factor U of H⁻¹ (H⁻¹ = UᵀU): with J
//     the order reversal, JHJ = L·Lᵀ (dpotrf) and U = J·L⁻¹·J (dtrtri).
//  4. Blocks of Block columns; in each, for every column i in turn and
//     every index row (one output row, or the d rows of a vector index)
//     independently: round w to the grid (scalar: nearest entry of w/s;
//     vector: nearest d-vector, jointly; INT8: round(w/s) half to even,
//     clipped to ±127), err = (w − q)/U_ii, and w[:, j] −= err·U[i, j] for
//     the later columns j of the block; then the lazy batch update
//     W[:, rest] −= Err·U[block, rest]. The in-block feedback is itself
//     lazy: float64, column by column, within sub-blocks of 16 columns,
//     and a float32 GEMM from each sub-block onto the block's later
//     columns. W is kept in float32 between sub-blocks; the lazy updates
//     are float32 GEMMs (la.gemmSub), as in the reference.
//  5. Undo the column order, pack the codes (lut.Pack) and build the
//     lut.Matrix.
//
// Rows of a row-grouped LUT use their group's codebook. BF16 and FP16 are
// plain rounding (RTN); h is then not used and may be nil.
//
// Errors (wrapping ErrInput): non-finite weights or Hessian entries, a nil
// or empty Hessian, one of the wrong width or accumulated DiagOnly, bad
// Damp or Block, and an H + λI that is not positive definite (raise Damp).
// Format errors wrap lut.ErrFormat. GPTQ is deterministic given
// Options.Seed: on one machine and build, the result does not depend on
// GOMAXPROCS. Concurrent calls may share a Hessian (Hessian).
//
// Cost: the factorization takes ≈ 2n³/3 float64 flops (9·10¹⁰ at
// n = 5120; n³ in the pure-Go backend, whose triangular inverse trades
// flops for gonum's faster Dgemm), the updates ≈ out·n² multiply-adds in
// float32 (GEMM) plus 8·out·n in float64; memory ≈ 8n² + 5·out·n bytes
// besides W and H. Measured times: BenchmarkGPTQ.
type GPTQ struct {
	Format lut.Format
	// AW fits the codebooks with each column weighted by diag(H), as
	// Nearest{AW: true} does (it replaces Options.Importance).
	AW bool
	// Options tune codebook fitting (Seed, sampling, k-means).
	Options Options
	// Damp is the relative damping λ/mean(diag H) (0: 0.01).
	Damp float64
	// Block is the number of columns per lazy batch update (0: 128).
	Block int
}

// Quantize implements Quantizer.
func (q GPTQ) Quantize(w *tensor.Matrix, h *Hessian) (*lut.Matrix, error) {
	m, err := q.quantize(w, h)
	if err != nil {
		return nil, fmt.Errorf("quant: GPTQ %s %dx%d: %w", q.Format, w.Rows, w.Cols, err)
	}
	return m, nil
}

func (q GPTQ) damp() float64 {
	if q.Damp == 0 {
		return 0.01
	}
	return q.Damp
}

// check validates the options and the Hessian for in input columns.
func (q GPTQ) check(h *Hessian, in int) error {
	switch {
	case !(q.Damp >= 0) || math.IsInf(q.Damp, 0):
		return fmt.Errorf("%w: Damp = %v is not finite and ≥ 0", ErrInput, q.Damp)
	case q.Block < 0:
		return fmt.Errorf("%w: Block = %d", ErrInput, q.Block)
	case h == nil || h.Rows() == 0:
		return fmt.Errorf("%w: no Hessian statistics", ErrInput)
	case h.dim() != in:
		return fmt.Errorf("%w: Hessian of %d inputs for %d input columns", ErrInput, h.dim(), in)
	case !h.full():
		return fmt.Errorf("%w: the Hessian was accumulated DiagOnly; GPTQ needs the full matrix", ErrInput)
	}
	return nil
}

// QuantizeWithRTN is Quantize that also returns nearest rounding (RTN)
// onto the same grid (the same scales and codebooks, fit once), for
// comparing the two (held-out SNR before and after GPTQ). For BF16/FP16
// both results are the same matrix.
func (q GPTQ) QuantizeWithRTN(w *tensor.Matrix, h *Hessian) (gptq, rtn *lut.Matrix, err error) {
	gptq, rtn, err = q.quantizeBoth(w, h, true)
	if err != nil {
		return nil, nil, fmt.Errorf("quant: GPTQ %s %dx%d: %w", q.Format, w.Rows, w.Cols, err)
	}
	return gptq, rtn, nil
}

func (q GPTQ) quantize(w *tensor.Matrix, h *Hessian) (*lut.Matrix, error) {
	m, _, err := q.quantizeBoth(w, h, false)
	return m, err
}

func (q GPTQ) quantizeBoth(w *tensor.Matrix, h *Hessian, wantRTN bool) (gm, rm *lut.Matrix, err error) {
	f, out, in := q.Format, w.Rows, w.Cols
	if err := f.CheckShape(out, in); err != nil {
		return nil, nil, err
	}
	if !f.Quantized() {
		m, err := rtn(w, f, q.Options)
		return m, m, err
	}
	if err := checkWeights(w); err != nil {
		return nil, nil, err
	}
	if err := q.check(h, in); err != nil {
		return nil, nil, err
	}
	opt := q.Options
	if q.AW {
		opt.Importance = h.Diag()
	}
	if err := opt.check(in); err != nil {
		return nil, nil, err
	}
	var g *grid
	if f.Kind == lut.Int8 {
		g, err = int8Grid(w)
	} else {
		g, err = lutGrid(w, f, opt)
	}
	if err != nil {
		return nil, nil, err
	}
	if wantRTN {
		if rm, err = lut.New(f, out, in, g.nearest(w, f)); err != nil {
			return nil, nil, err
		}
	}
	perm, u, err := gptqFactor(h, q.damp())
	if err != nil {
		return nil, nil, err
	}
	r := newGPTQRun(w, g, perm, u, pick(q.Block, 128))
	if err := r.run(q.Options.context()); err != nil {
		return nil, nil, err
	}
	gm, err = lut.New(f, out, in, g.parts(r.codes, f))
	return gm, rm, err
}

// parts packs codes ([out/d][in], INT8: int8 bytes) with g's scales and
// codebooks.
func (g *grid) parts(codes []uint8, f lut.Format) lut.Parts {
	p := lut.Parts{Index: codes, Scale: g.scale}
	if f.Kind != lut.Int8 {
		p.LUT = g.lut()
		p.Index = make([]byte, lut.PackedLen(len(codes), f.Bits))
		lut.Pack(p.Index, codes, f.Bits)
	}
	return p
}

// nearest is RTN onto g: every index row's weights at each column rounded
// to the nearest grid value (grid.round).
func (g *grid) nearest(w *tensor.Matrix, f lut.Format) lut.Parts {
	in, rows := w.Cols, f.IndexRows(w.Rows)
	codes := make([]uint8, rows*in)
	q, v := make([]float64, g.d), make([]float64, g.d)
	for r := range rows {
		for j := range in {
			for t := range v {
				v[t] = float64(w.Data[(g.d*r+t)*in+j])
			}
			codes[r*in+j] = g.round(q, v, r)
		}
	}
	return g.parts(codes, f)
}

// checkWeights fails on a non-finite weight.
func checkWeights(w *tensor.Matrix) error {
	for i, v := range w.Data[:w.Rows*w.Cols] {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: weight [%d][%d] = %v", ErrInput, i/w.Cols, i%w.Cols, v)
		}
	}
	return nil
}

// gptqFactor returns GPTQ's column order perm (descending diag H, stable)
// and the upper Cholesky factor U [n][n] (row-major, zero below the
// diagonal) of (P(H + λI)Pᵀ)⁻¹, λ = damp·mean(diag H), dead columns'
// H_jj set to 1 first (GPTQ steps 1–3).
func gptqFactor(h *Hessian, damp float64) (perm []int, u []float64, err error) {
	h.flush()
	n, d := h.dim(), h.Diag()
	perm = make([]int, n)
	for j := range perm {
		perm[j] = j
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(d[b], d[a]) })
	var mean float64
	for _, v := range d {
		mean += v
	}
	lambda := damp * mean / float64(max(n, 1))
	a, err := reversedHessian(h, d, perm, lambda)
	if err != nil {
		return nil, nil, err
	}
	if !la.cholInv(a, n) {
		return nil, nil, fmt.Errorf("%w: H + %.3g·I is not positive definite (raise Damp)", ErrInput, lambda)
	}
	// U = J·L⁻¹·J: element (i, j) ↔ (n−1−i, n−1−j) is flat index
	// k ↔ n²−1−k, so U is L⁻¹ reversed.
	slices.Reverse(a)
	return perm, a, nil
}

// reversedHessian returns the lower triangle of J·P(H + λI)Pᵀ·J, [n][n]
// row-major with a zero upper triangle: a[i][j] = H[rp(i)][rp(j)] with
// rp(i) = perm[n−1−i], diag(H) d, dead columns' H_jj = 1. It fails on a
// non-finite entry.
func reversedHessian(h *Hessian, d []float64, perm []int, lambda float64) ([]float64, error) {
	n, rows := h.dim(), float64(h.n)
	a := make([]float64, n*n)
	bad := make([]bool, n)
	parallel(n, max(1, 1<<14/max(n, 1)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p := perm[n-1-i]
			row := a[i*n : i*n+i+1]
			if h.low != nil {
				for j := range i {
					q := perm[n-1-j]
					row[j] = h.low[max(p, q)*n+min(p, q)] / rows
				}
			}
			row[i] = d[p]
			if d[p] == 0 {
				row[i] = 1
			}
			row[i] += lambda
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					bad[i] = true
				}
			}
		}
	})
	if i := slices.Index(bad, true); i >= 0 {
		return nil, fmt.Errorf("%w: Hessian row %d is not finite", ErrInput, perm[n-1-i])
	}
	return a, nil
}

// gptqRun is GPTQ step 4 on one matrix.
type gptqRun struct {
	g     *grid
	out   int
	n     int       // input columns
	block int       // columns per block
	w     []float32 // [out][n] weights, columns in GPTQ order, updated between sub-blocks
	u     []float64 // [n][n] upper Cholesky factor of H⁻¹ (GPTQ order)
	perm  []int     // [n] GPTQ position → input column
	errs  []float32 // [out][bw] err = (w − q)/U_ii of the current block (bw columns)
	codes []uint8   // [out/d][n] codes in input column order (INT8: int8 bytes)
}

func newGPTQRun(w *tensor.Matrix, g *grid, perm []int, u []float64, block int) *gptqRun {
	out, n := w.Rows, w.Cols
	r := &gptqRun{
		g: g, out: out, n: n, block: block, u: u, perm: perm,
		w:     make([]float32, out*n),
		errs:  make([]float32, out*min(block, n)),
		codes: make([]uint8, out/g.d*n),
	}
	parallel(out, max(1, 1<<15/max(n, 1)), func(lo, hi int) {
		for o := lo; o < hi; o++ {
			src, dst := w.Row(o), r.w[o*n:(o+1)*n]
			for i, j := range perm {
				dst[i] = src[j]
			}
		}
	})
	return r
}

// gptqSub is the number of columns whose error feedback runs row by row
// (float64, scalar); the columns after them in the same block are updated
// by a float32 GEMM, as the columns after a block are. Same arithmetic as
// one column at a time, but 1/8 of the scalar multiply-adds at Block =
// 128 (they dominated GPTQ's time with row-by-row feedback across the
// whole block).
const gptqSub = 16

// run quantizes block after block, each in sub-blocks of gptqSub columns:
// a sub-block for every index row (in parallel; rows are independent
// given U), then the lazy update of the block's later columns, and after
// the last sub-block that of the columns after the block.
func (r *gptqRun) run(ctx context.Context) error {
	d, n := r.g.d, r.n
	for i1 := 0; i1 < n; i1 += r.block {
		if err := ctx.Err(); err != nil {
			return err
		}
		i2 := min(i1+r.block, n)
		bw := i2 - i1
		for s1 := i1; s1 < i2; s1 += gptqSub {
			s2 := min(s1+gptqSub, i2)
			parallel(r.out/d, max(1, 1<<12/(d*gptqSub*gptqSub)), func(lo, hi int) {
				buf := make([]float64, d*(s2-s1)) // [d][s2−s1] the index row's weights in the sub-block
				wv, qv := make([]float64, d), make([]float64, d)
				for ir := lo; ir < hi; ir++ {
					r.quantRow(ir, s1, s2, i1, bw, buf, wv, qv)
				}
			})
			if s2 < i2 { // W[:, s2:i2] −= Err[:, s1:s2]·U[s1:s2, s2:i2]
				la.gemmSub(r.w[s2:], n, r.errs[s1-i1:], bw, r.u[s1*n+s2:], n, r.out, i2-s2, s2-s1)
			}
		}
		if i2 < n { // W[:, i2:] −= Err·U[i1:i2, i2:]
			la.gemmSub(r.w[i2:], n, r.errs, bw, r.u[i1*n+i2:], n, r.out, n-i2, bw)
		}
	}
	return nil
}

// quantRow rounds index row ir (output rows d·ir … d·ir+d−1) in the
// columns [s1, s2) of the block starting at i1 (bw columns wide), feeding
// each column's error forward within [s1, s2) in float64 and recording it
// in errs (row stride bw).
func (r *gptqRun) quantRow(ir, s1, s2, i1, bw int, buf, wv, qv []float64) {
	d, n, sw := r.g.d, r.n, s2-s1
	for t := range d {
		o := d*ir + t
		for c, x := range r.w[o*n+s1 : o*n+s2] {
			buf[t*sw+c] = float64(x)
		}
	}
	for c := range sw {
		i := s1 + c
		for t := range d {
			wv[t] = buf[t*sw+c]
		}
		r.codes[ir*n+r.perm[i]] = r.g.round(qv, wv, ir)
		uii, urow := r.u[i*n+i], r.u[i*n+i+1:i*n+s2]
		for t := range d {
			e := (wv[t] - qv[t]) / uii
			r.errs[(d*ir+t)*bw+i-i1] = float32(e)
			axpy(buf[t*sw+c+1:(t+1)*sw], urow, -e)
		}
	}
}

// axpy sets y[k] += a·x[k] for k < len(x) ≤ len(y), four at a time.
func axpy(y, x []float64, a float64) {
	y = y[:len(x)]
	k := 0
	for ; k+4 <= len(x); k += 4 {
		xs, ys := x[k:k+4:k+4], y[k:k+4:k+4]
		ys[0] += a * xs[0]
		ys[1] += a * xs[1]
		ys[2] += a * xs[2]
		ys[3] += a * xs[3]
	}
	for ; k < len(x); k++ {
		y[k] += a * x[k]
	}
}
