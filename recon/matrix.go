package recon

import (
	"fmt"
	"math"

	"forge/lut"
	"forge/tensor"
)

// Matrix is a quantized matrix (lut.Matrix: Scalar, Vector or INT8) as a
// trainable Linear. Its indices (INT8 codes) and rotation stay fixed; its
// parameters are
//
//	Ŵ[o,j] = s0[o]·exp(ℓ[o]) · book(o)[code(o,j)][o mod d]     (codebook kinds)
//	Ŵ[o,j] = s0[o]·exp(ℓ[o]) · c[o,j]                          (INT8)
//	y = x'·(Ŵ + A·B)ᵀ,   x' = x·M                               (M the rotation, if any)
//
// with the codebooks (fp32 masters in float64), the log-scales ℓ (starting
// at 0 from the stored scales s0) and the low-rank factors A [out][r],
// B [r][in] trainable (reference-pipeline.md §2). Gradients: with
// G = Σ_t dyₜᵀ·x'ₜ [out][in] (dL/dŴ),
//
//	dL/dℓ[o]          = Σ_j G[o,j]·Ŵ[o,j]
//	dL/dbook_g[c][t]  = Σ_{o ∈ g, o mod d = t} s[o]·Σ_{j: code(o,j) = c} G[o,j]
//	dL/dA = Σ_t dyₜᵀ·(x'ₜ·Bᵀ),   dL/dB = Σ_t (dyₜ·A)ᵀ·x'ₜ
//
// G is accumulated by Backward and reduced to the parameters by Grads.
type Matrix struct {
	src       *lut.Matrix
	f         lut.Format
	out, in   int
	rank      int
	codes     []uint8   // [out/d][in] (INT8: two's-complement bytes)
	rot       *rotation // nil: none
	Book      []float64 // [groups][K][d] codebook values (nil for INT8)
	LogScale  []float64 // [out] ℓ
	s0        []float64 // [out] stored scales
	A, B      []float64 // [out][r], [r][in] (rank 0: nil)
	GBook     []float64 // gradients, same shapes
	GLogScale []float64
	GA, GB    []float64
	w         []float64 // [out][in] Ŵ (without A·B), from the parameters (Refresh)
	g         []float64 // [out][in] G
	xr, buf   []float64 // scratch
}

// NewMatrix makes the trainable twin of m (which is not modified): a
// quantized format with a lut.Hadamard rotation or none.
func NewMatrix(m *lut.Matrix) (*Matrix, error) {
	f := m.Format()
	if !f.Quantized() {
		return nil, fmt.Errorf("recon: %s has no codebook or scales to train", f)
	}
	out, in := m.Dims()
	p := m.Parts()
	rot, err := newRotation(p.Rotation)
	if err != nil {
		return nil, err
	}
	x := &Matrix{src: m, f: f, out: out, in: in, rank: m.Rank(), rot: rot,
		codes: make([]uint8, f.IndexRows(out)*in)}
	m.Codes(x.codes)
	x.s0 = widen(p.Scale)
	x.LogScale = make([]float64, out)
	if f.Kind != lut.Int8 {
		x.Book = widen(p.LUT)
	}
	if x.rank > 0 {
		x.A, x.B = widen(p.LowRankA), widen(p.LowRankB)
	}
	x.GBook, x.GLogScale = make([]float64, len(x.Book)), make([]float64, out)
	x.GA, x.GB = make([]float64, len(x.A)), make([]float64, len(x.B))
	x.w, x.g = make([]float64, out*in), make([]float64, out*in)
	x.Refresh()
	return x, nil
}

func widen(h []uint16) []float64 {
	v := make([]float64, len(h))
	for i, b := range h {
		v[i] = float64(tensor.F16ToF32(b))
	}
	return v
}

// Dims returns [out, in].
func (x *Matrix) Dims() (int, int) { return x.out, x.in }

// Rank is r of the low-rank factors (0: none).
func (x *Matrix) Rank() int { return x.rank }

// level returns the unscaled value of row o at column j: book(o)[code][o mod d] or the INT8 code.
func (x *Matrix) rowValues(o int, dst []float64) {
	d := max(x.f.Dim, 1)
	codes := x.codes[(o/d)*x.in : (o/d+1)*x.in]
	if x.f.Kind == lut.Int8 {
		for j, c := range codes {
			dst[j] = float64(int8(c))
		}
		return
	}
	K := x.f.Entries()
	g := 0
	if x.f.Group > 0 {
		g = o / x.f.Group
	}
	book := x.Book[g*K*d : (g+1)*K*d]
	t := o % d
	for j, c := range codes {
		dst[j] = book[int(c)*d+t]
	}
}

// Refresh recomputes Ŵ from the parameters; call it after changing them.
func (x *Matrix) Refresh() {
	for o := range x.out {
		row := x.w[o*x.in : (o+1)*x.in]
		x.rowValues(o, row)
		s := x.s0[o] * math.Exp(x.LogScale[o])
		for j := range row {
			row[j] *= s
		}
	}
}

// rotated returns x' = x·M (x itself without a rotation).
func (x *Matrix) rotated(in []float64, T int) []float64 {
	if x.rot == nil {
		return in
	}
	x.xr = grow(x.xr, T*x.in)
	x.rot.apply(x.xr, in, T, false)
	return x.xr
}

// Forward sets y = x'·(Ŵ + A·B)ᵀ.
func (x *Matrix) Forward(y, in []float64, T int) {
	xr := x.rotated(in, T)
	gemm(y, false, xr, true, x.w, T, x.out, x.in, false)
	if x.rank > 0 {
		x.buf = grow(x.buf, T*x.rank)
		gemm(x.buf, false, xr, true, x.B, T, x.rank, x.in, false) // [T][r] = x'·Bᵀ
		gemm(y, false, x.buf, true, x.A, T, x.out, x.rank, true)
	}
}

// Backward adds dyᵀ·x' to G (and the factors' gradients) and sets
// dx = (dy·(Ŵ + A·B))·Mᵀ.
func (x *Matrix) Backward(dx, in, dy []float64, T int) {
	xr := x.rotated(in, T)
	gemm(x.g, true, dy, false, xr, x.out, x.in, T, true)
	if x.rank > 0 {
		r := x.rank
		x.buf = grow(x.buf, 2*T*r)
		xb, da := x.buf[:T*r], x.buf[T*r:]
		gemm(xb, false, xr, true, x.B, T, r, x.in, false)   // x'·Bᵀ [T][r]
		gemm(x.GA, true, dy, false, xb, x.out, r, T, true)  // dyᵀ·(x'Bᵀ)
		gemm(da, false, dy, false, x.A, T, r, x.out, false) // dy·A [T][r]
		gemm(x.GB, true, da, false, xr, r, x.in, T, true)   // (dy·A)ᵀ·x'
		if dx != nil {
			gemm(dx, false, dy, false, x.w, T, x.in, x.out, false)
			gemm(dx, false, da, false, x.B, T, x.in, r, true)
		}
	} else if dx != nil {
		gemm(dx, false, dy, false, x.w, T, x.in, x.out, false)
	}
	if dx != nil && x.rot != nil {
		x.rot.apply(dx, dx, T, true)
	}
}

// Grads reduces the accumulated G into GBook and GLogScale (adding) and
// clears G.
func (x *Matrix) Grads() {
	d := max(x.f.Dim, 1)
	K := x.f.Entries()
	for o := range x.out {
		g, w := x.g[o*x.in:(o+1)*x.in], x.w[o*x.in:(o+1)*x.in]
		var ds float64
		for j, v := range g {
			ds += v * w[j]
		}
		x.GLogScale[o] += ds
		if x.f.Kind != lut.Int8 {
			s := x.s0[o] * math.Exp(x.LogScale[o])
			gi := 0
			if x.f.Group > 0 {
				gi = o / x.f.Group
			}
			gb := x.GBook[gi*K*d : (gi+1)*K*d]
			t := o % d
			codes := x.codes[(o/d)*x.in : (o/d+1)*x.in]
			for j, c := range codes {
				gb[int(c)*d+t] += s * g[j]
			}
		}
		clear(g)
	}
}

// ZeroGrads clears every gradient.
func (x *Matrix) ZeroGrads() {
	clear(x.g)
	clear(x.GBook)
	clear(x.GLogScale)
	clear(x.GA)
	clear(x.GB)
}

// params returns the trainable arrays with their gradients, by group:
// 0 codebooks, 1 log-scales, 2 factors.
func (x *Matrix) params() (p, g [3][][]float64) {
	if x.Book != nil {
		p[0], g[0] = [][]float64{x.Book}, [][]float64{x.GBook}
	}
	p[1], g[1] = [][]float64{x.LogScale}, [][]float64{x.GLogScale}
	if x.rank > 0 {
		p[2], g[2] = [][]float64{x.A, x.B}, [][]float64{x.GA, x.GB}
	}
	return p, g
}

// Round rounds the parameters to what a bundle stores: codebooks, scales
// s0·exp(ℓ) and factors to fp16 (ℓ is recomputed from the rounded
// scale), and refreshes Ŵ. It fails if a value is not finite in fp16 or a
// scale rounds to zero.
func (x *Matrix) Round() error {
	for i, v := range x.Book {
		h, err := half(v)
		if err != nil {
			return fmt.Errorf("codebook value %d: %w", i, err)
		}
		x.Book[i] = float64(tensor.F16ToF32(h))
	}
	for o, l := range x.LogScale {
		h, err := half(x.s0[o] * math.Exp(l))
		if err != nil {
			return fmt.Errorf("scale %d: %w", o, err)
		}
		s := float64(tensor.F16ToF32(h))
		if s <= 0 {
			return fmt.Errorf("scale %d rounds to %v in fp16", o, s)
		}
		x.LogScale[o] = math.Log(s / x.s0[o])
	}
	for _, a := range [][]float64{x.A, x.B} {
		for i, v := range a {
			h, err := half(v)
			if err != nil {
				return fmt.Errorf("low-rank factor value %d: %w", i, err)
			}
			a[i] = float64(tensor.F16ToF32(h))
		}
	}
	x.Refresh()
	return nil
}

func half(v float64) (uint16, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%v", v)
	}
	h := tensor.F32ToF16(float32(v))
	if f := tensor.F16ToF32(h); math.IsInf(float64(f), 0) {
		return 0, fmt.Errorf("%v overflows fp16", v)
	}
	return h, nil
}

// Export returns the lut.Matrix of the current parameters (Round them
// first: Export stores the fp16 of each value): the source's format,
// shape, index array and rotation, new LUT, Scale and factor arrays.
func (x *Matrix) Export() (*lut.Matrix, error) {
	p := x.src.Parts()
	p.LUT = nil
	if x.Book != nil {
		p.LUT = make([]uint16, len(x.Book))
		for i, v := range x.Book {
			p.LUT[i] = tensor.F32ToF16(float32(v))
		}
	}
	p.Scale = make([]uint16, x.out)
	for o, l := range x.LogScale {
		p.Scale[o] = tensor.F32ToF16(float32(x.s0[o] * math.Exp(l)))
	}
	if x.rank > 0 {
		p.LowRankA, p.LowRankB = make([]uint16, len(x.A)), make([]uint16, len(x.B))
		for i, v := range x.A {
			p.LowRankA[i] = tensor.F32ToF16(float32(v))
		}
		for i, v := range x.B {
			p.LowRankB[i] = tensor.F32ToF16(float32(v))
		}
	}
	return lut.New(x.f, x.out, x.in, p)
}

// snapshot and restore save and put back the parameters (the held-out
// keep rule and the NaN revert).
func (x *Matrix) snapshot() [][]float64 {
	var s [][]float64
	for _, a := range [][]float64{x.Book, x.LogScale, x.A, x.B} {
		s = append(s, append([]float64(nil), a...))
	}
	return s
}

func (x *Matrix) restore(s [][]float64) {
	for i, a := range [][]float64{x.Book, x.LogScale, x.A, x.B} {
		copy(a, s[i])
	}
	x.Refresh()
}
