package quant

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"forge/lut"
	"forge/tensor"
)

// Quantizer turns one weight matrix W [out, in] and its calibration
// statistics into a lut.Matrix (docs/architecture.md §3). Implementations: Nearest (RTN,
// this file); GPTQ comes later.
type Quantizer interface {
	Quantize(w *tensor.Matrix, h *Hessian) (*lut.Matrix, error)
}

// ErrInput is wrapped by errors about the weights or options given to a
// quantizer (non-finite weights, bad importance weights).
var ErrInput = errors.New("invalid quantizer input")

// Options tune codebook fitting; the zero value is the reference setting
// of docs/quantization.md §2.
type Options struct {
	// Seed makes sampling and k-means++ deterministic: same seed, same
	// codebooks and codes.
	Seed uint64
	// Importance, if set, weights each weight's squared error in codebook
	// fitting by the importance of its input column: diag(H)[j] for AW
	// (activation-weighted codebooks). len = in, finite, ≥ 0, not all zero.
	// It changes the codebooks, not the rounding (each weight still goes
	// to its nearest entry).
	Importance []float64
	// MaxSamples caps the vectors vector k-means fits on (0: 300,000).
	MaxSamples int
	// Inits is the number of k-means++ initializations (0: 3).
	Inits int
	// MaxIter caps Lloyd iterations per initialization (0: 200).
	MaxIter int
	// ScalarSamples caps the values a scalar codebook is fit on (0: 2²⁰);
	// larger groups are sampled uniformly without replacement. Every weight
	// is still rounded.
	ScalarSamples int
	// Context, if set, stops long work (GPTQ between blocks of columns,
	// k-means between iterations) with its error once it is done.
	Context context.Context
}

// context returns o.Context, or a context that is never done.
func (o Options) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

func (o Options) samples() int       { return pick(o.MaxSamples, 300_000) }
func (o Options) inits() int         { return pick(o.Inits, 3) }
func (o Options) maxIter() int       { return pick(o.MaxIter, 200) }
func (o Options) scalarSamples() int { return pick(o.ScalarSamples, 1<<20) }

func pick(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// check validates the importance weights for in input columns.
func (o Options) check(in int) error {
	if o.Importance == nil {
		return nil
	}
	if len(o.Importance) != in {
		return fmt.Errorf("%w: %d importance weights for %d input columns", ErrInput, len(o.Importance), in)
	}
	var sum float64
	for j, h := range o.Importance {
		if !(h >= 0) || math.IsInf(h, 0) {
			return fmt.Errorf("%w: importance[%d] = %v is not finite and ≥ 0", ErrInput, j, h)
		}
		sum += h
	}
	if sum == 0 {
		return fmt.Errorf("%w: importance weights are all zero", ErrInput)
	}
	return nil
}

// Nearest is round-to-nearest (RTN) quantization into Format, with
// codebooks fit by k-means (docs/quantization.md §2). With AW set, codebook
// fitting weights each column by diag(H) of the Hessian passed to
// Quantize (which must then not be nil), replacing Options.Importance.
type Nearest struct {
	Format  lut.Format
	AW      bool
	Options Options
}

// Quantize implements Quantizer.
func (q Nearest) Quantize(w *tensor.Matrix, h *Hessian) (*lut.Matrix, error) {
	opt := q.Options
	if q.AW {
		if h == nil || h.Rows() == 0 {
			return nil, fmt.Errorf("quant: %s with AW: %w: no Hessian statistics", q.Format, ErrInput)
		}
		opt.Importance = h.Diag()
	}
	return RTN(w, q.Format, opt)
}

// RTN quantizes W [out, in] into format f by rounding every weight to
// nearest (docs/quantization.md §1–2):
//
//   - LUT<b> and vector d×K + pcs: per-output-channel scales
//     s[o] = fp16(√(mean_j W[o,j]²)) (a zero scale becomes 1), a codebook
//     per tensor or row group fit to W/s (FitScalar: weighted 1-D Lloyd;
//     FitVectors: k-means++ on d-vectors along Cout), rounded to fp16, then
//     every weight (d-vector) coded by its nearest entry;
//   - INT8 per-channel: s[o] = fp16(max_j |W[o,j]| / 127) (zero → 1),
//     c = round(W/s) half to even, clipped to [−127, 127];
//   - bf16 / fp16: each weight rounded to nearest even.
//
// Scales are computed in float64 and rounded through float32 to fp16. W
// must be finite. The result's arrays are ready for a bundle; RTN is
// deterministic given opt.Seed.
func RTN(w *tensor.Matrix, f lut.Format, opt Options) (*lut.Matrix, error) {
	m, err := rtn(w, f, opt)
	if err != nil {
		return nil, fmt.Errorf("quant: RTN %s %dx%d: %w", f, w.Rows, w.Cols, err)
	}
	return m, nil
}

func rtn(w *tensor.Matrix, f lut.Format, opt Options) (*lut.Matrix, error) {
	out, in := w.Rows, w.Cols
	if err := f.CheckShape(out, in); err != nil {
		return nil, err
	}
	if err := checkWeights(w); err != nil {
		return nil, err
	}
	if err := opt.check(in); err != nil {
		return nil, err
	}
	var p lut.Parts
	var err error
	switch f.Kind {
	case lut.BF16, lut.FP16:
		p.Weight = make([]uint16, out*in)
		if f.Kind == lut.BF16 {
			tensor.F32ToBF16Slice(p.Weight, w.Data[:out*in])
		} else {
			tensor.F32ToF16Slice(p.Weight, w.Data[:out*in])
		}
	case lut.Int8:
		p, err = rtnInt8(w)
	default:
		p, err = rtnLUT(w, f, opt)
	}
	if err != nil {
		return nil, err
	}
	return lut.New(f, out, in, p)
}

// toF16 rounds a float64 through float32 to an fp16 bit pattern.
func toF16(v float64) uint16 { return tensor.F32ToF16(float32(v)) }

// fp16One is 1.0 in fp16, the scale that replaces a zero one.
const fp16One = 0x3c00

// PCS returns the per-output-channel scales of W (docs/quantization.md §1):
// s[o] = √(mean_j W[o,j]²) rounded to fp16, a zero scale replaced by 1. It
// fails if a scale overflows fp16.
func PCS(w *tensor.Matrix) ([]uint16, error) {
	s := make([]uint16, w.Rows)
	for o := range w.Rows {
		var ss float64
		for _, v := range w.Row(o) {
			ss += float64(v) * float64(v)
		}
		if err := setScale(s, o, math.Sqrt(ss/float64(w.Cols))); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// setScale stores fp16(v) in s[o] (zero → 1), failing on fp16 overflow.
func setScale(s []uint16, o int, v float64) error {
	h := toF16(v)
	switch {
	case h&0x7fff == 0:
		h = fp16One
	case h&0x7c00 == 0x7c00:
		return fmt.Errorf("%w: row %d: scale %g overflows fp16", ErrInput, o, v)
	}
	s[o] = h
	return nil
}

// rtnInt8 is RTN for INT8 per-channel.
func rtnInt8(w *tensor.Matrix) (lut.Parts, error) {
	out, in := w.Rows, w.Cols
	g, err := int8Grid(w)
	if err != nil {
		return lut.Parts{}, err
	}
	p := lut.Parts{Index: make([]byte, out*in), Scale: g.scale}
	q, v := make([]float64, 1), make([]float64, 1)
	for o := range out {
		for j, x := range w.Row(o) {
			v[0] = float64(x)
			p.Index[o*in+j] = g.round(q, v, o)
		}
	}
	return p, nil
}

// rtnLUT is RTN for scalar and vector LUT formats: pcs scales, one
// codebook per group fit on the normalized weights, nearest codes.
func rtnLUT(w *tensor.Matrix, f lut.Format, opt Options) (lut.Parts, error) {
	g, err := lutGrid(w, f, opt)
	if err != nil {
		return lut.Parts{}, err
	}
	in, rows := w.Cols, f.IndexRows(w.Rows)
	codes := make([]uint8, rows*in) // [out/d][in]
	for gi, cb := range g.books {
		r0 := gi * g.rowsG
		gr := group{w: w, s: g.s, d: g.d, r0: r0, r1: min(r0+g.rowsG, rows)}
		gr.code(cb, codes)
	}
	idx := make([]byte, lut.PackedLen(len(codes), f.Bits))
	lut.Pack(idx, codes, f.Bits)
	return lut.Parts{LUT: g.lut(), Index: idx, Scale: g.scale}, nil
}

// grid is the set of values a quantized format can give each index row
// (d output rows at one input column): per-output-channel scales and, for
// LUT formats, one codebook per row group; for INT8 the integers
// [−127, 127]. RTN and GPTQ round to the same grid.
type grid struct {
	d     int         // output rows per index (vector length; 1 for scalars, INT8)
	scale []uint16    // [out] fp16 scales
	s     []float64   // [out] scales widened
	books []*Codebook // [groups] (nil for INT8)
	rowsG int         // index rows per codebook group
}

// int8Grid returns the INT8 per-channel grid of W: s[o] = fp16(max_j
// |W[o,j]| / 127), zero → 1.
func int8Grid(w *tensor.Matrix) (*grid, error) {
	g := &grid{d: 1, scale: make([]uint16, w.Rows), s: make([]float64, w.Rows)}
	for o := range w.Rows {
		var mx float64
		for _, v := range w.Row(o) {
			mx = max(mx, math.Abs(float64(v)))
		}
		if err := setScale(g.scale, o, mx/127); err != nil {
			return nil, err
		}
		g.s[o] = float64(tensor.F16ToF32(g.scale[o]))
	}
	return g, nil
}

// lutGrid returns the grid of a scalar or vector LUT format for W: pcs
// scales and one codebook per row group, fit on the normalized weights
// W/s (seeded by opt.Seed and the group number).
func lutGrid(w *tensor.Matrix, f lut.Format, opt Options) (*grid, error) {
	scale, err := PCS(w)
	if err != nil {
		return nil, err
	}
	g := &grid{d: f.Dim, scale: scale, s: make([]float64, w.Rows)}
	for o, h := range scale {
		g.s[o] = float64(tensor.F16ToF32(h))
	}
	rows := f.IndexRows(w.Rows)
	g.rowsG = rows
	if f.Group > 0 {
		g.rowsG = f.Group / f.Dim
	}
	for gi, r0 := 0, 0; r0 < rows; gi, r0 = gi+1, r0+g.rowsG {
		gr := group{w: w, s: g.s, d: g.d, r0: r0, r1: min(r0+g.rowsG, rows), imp: opt.Importance}
		cb, err := gr.fit(f, opt, uint64(gi))
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", gi, err)
		}
		g.books = append(g.books, cb)
	}
	return g, nil
}

// lut returns the codebooks as the stored fp16 array [groups][K][d].
func (g *grid) lut() []uint16 {
	var book []uint16
	for _, cb := range g.books {
		book = append(book, cb.FP16()...)
	}
	return book
}

// round rounds the raw weights w (len d) of index row r at one column to
// the grid: it returns the code and sets q to the quantized weights
// s[o]·entry (INT8: s[o]·c, c = round(w/s) half to even, clipped to
// [−127, 127]). LUT codes are the nearest entry to w/s (Codebook.Nearest,
// the lowest index on ties), using q as scratch first.
func (g *grid) round(q, w []float64, r int) uint8 {
	if g.books == nil {
		s := g.s[r]
		c := min(max(math.RoundToEven(w[0]/s), -127), 127)
		q[0] = c * s
		return byte(int8(c))
	}
	o := r * g.d
	if g.d == 1 { // the scalar fast path of the same rule
		cb := g.books[r/g.rowsG]
		k := cb.nearestScalar(w[0] / g.s[o])
		q[0] = g.s[o] * float64(cb.Values[k])
		return uint8(k)
	}
	for t, v := range w {
		q[t] = v / g.s[o+t]
	}
	cb := g.books[r/g.rowsG]
	k := cb.Nearest(q)
	for t, e := range cb.Entry(k) {
		q[t] = g.s[o+t] * float64(e)
	}
	return uint8(k)
}

// group is the index rows [r0, r1) of W that share one codebook; vector
// (r, j) is (W[d·r+t, j] / s[d·r+t])_t.
type group struct {
	w      *tensor.Matrix
	s      []float64
	d      int
	r0, r1 int
	imp    []float64
}

// vec writes the normalized d-vector (r, j) into v.
func (g *group) vec(v []float64, r, j int) {
	for t := range v {
		o := g.d*r + t
		v[t] = float64(g.w.Data[o*g.w.Cols+j]) / g.s[o]
	}
}

// fit samples the group's normalized vectors (seeded by opt.Seed and the
// group number) and fits a codebook to them.
func (g *group) fit(f lut.Format, opt Options, gi uint64) (*Codebook, error) {
	in := g.w.Cols
	n := (g.r1 - g.r0) * in
	limit := opt.samples()
	if g.d == 1 {
		limit = opt.scalarSamples()
	}
	idx := sampleIndices(rand.New(rand.NewPCG(opt.Seed, 0x73616d706c65^gi)), n, limit) // "sample"
	v := make([]float64, len(idx)*g.d)
	var wt []float64
	if g.imp != nil {
		wt = make([]float64, len(idx))
	}
	for i, k := range idx {
		r, j := g.r0+k/in, k%in
		g.vec(v[i*g.d:(i+1)*g.d], r, j)
		if wt != nil {
			wt[i] = g.imp[j]
		}
	}
	if g.d == 1 {
		return FitScalar(v, wt, f.Entries())
	}
	o := opt
	o.Seed = opt.Seed ^ gi*0x9e3779b97f4a7c15
	return FitVectors(v, wt, g.d, f.Entries(), o)
}

// code sets codes[r·in + j] to the nearest entry of every vector of the
// group, rows in parallel.
func (g *group) code(cb *Codebook, codes []uint8) {
	in := g.w.Cols
	parallel(g.r1-g.r0, max(1, 1<<16/in), func(lo, hi int) {
		v := make([]float64, g.d)
		for r := g.r0 + lo; r < g.r0+hi; r++ {
			for j := range in {
				g.vec(v, r, j)
				codes[r*in+j] = uint8(cb.Nearest(v))
			}
		}
	})
}
