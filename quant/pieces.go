package quant

import (
	"fmt"

	"forge/lut"
	"forge/tensor"
)

// The pieces Spec.Quantize chains, each usable alone: the rotation of the
// weights' input basis, the output SNR of a quantized matrix, and the
// low-rank correction of its error.

// Rotated returns W' = W·M [out, in], a new matrix, and the rotation M =
// lut.NewHadamard(in, seed) (docs/quantization.md §3). W is not modified.
// A matrix quantized from W' and carrying M as its lut.Parts.Rotation
// computes (an approximation of) the original layer: x'·W'ᵀ = x·Wᵀ.
func Rotated(w *tensor.Matrix, seed uint64) (*tensor.Matrix, *lut.Hadamard) {
	h := lut.NewHadamard(w.Cols, seed)
	wr := tensor.New(w.Rows, w.Cols)
	h.Rotate(wr, w)
	return wr, h
}

// DequantOutputSNR is OutputSNR(w, Ŵ, h) with Ŵ [out, in] the matrix m
// applies to its (rotated) input, Ŵ + A·B (lut.Matrix.Dequantize): so w
// must be in the basis m is stored in (rotated if m carries a rotation).
// It panics as OutputSNR does.
func DequantOutputSNR(w *tensor.Matrix, m *lut.Matrix, h *Hessian) float64 {
	out, in := m.Dims()
	d := tensor.New(out, in)
	m.Dequantize(d)
	return OutputSNR(w, d, h)
}

// Correction fits the rank-r correction of m's error, E = W − Ŵ (Ŵ as
// lut.Matrix.Dequantize gives it, in m's stored basis), by LowRank with
// opt, and returns the factors A [out][r] and B [r][in] (fp16) ready for
// lut.Parts.LowRankA/B at rank exactly r: when LowRank keeps fewer
// components (its doc says when), the rest are zero columns of A and zero
// rows of B, which add nothing. Errors are LowRank's.
func Correction(w *tensor.Matrix, m *lut.Matrix, r int, opt LowRankOptions) (a, b []uint16, err error) {
	out, in := m.Dims()
	if w.Rows != out || w.Cols != in {
		return nil, nil, fmt.Errorf("quant: Correction: %w: W %dx%d, matrix %dx%d", ErrInput, w.Rows, w.Cols, out, in)
	}
	e := tensor.New(out, in)
	m.Dequantize(e)
	for i := range e.Data[:out*in] {
		e.Data[i] = w.Data[i] - e.Data[i]
	}
	fit, err := LowRank(e, r, opt)
	if err != nil {
		return nil, nil, err
	}
	a, b = make([]uint16, out*r), make([]uint16, r*in)
	for o := range out {
		copy(a[o*r:o*r+fit.Rank], fit.A[o*fit.Rank:(o+1)*fit.Rank])
	}
	copy(b, fit.B)
	return a, b, nil
}

// rebuild returns m with its parts changed by edit (the arrays are shared,
// not copied).
func rebuild(m *lut.Matrix, edit func(p *lut.Parts)) (*lut.Matrix, error) {
	p := m.Parts()
	edit(&p)
	out, in := m.Dims()
	return lut.New(m.Format(), out, in, p)
}
