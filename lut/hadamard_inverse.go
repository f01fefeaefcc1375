package lut

import (
	"fmt"

	"forge/tensor"
)

// RotateTranspose sets dst = x·Mᵀ = x·M⁻¹ for x and dst [T, width], undoing
// Rotate: since every block is M_b = D_b·H_n/√n with H_n symmetric,
//
//	M_bᵀ = H_n·D_b/√n,   so   (x·Mᵀ)_b = (x_b·H_n) ⊙ (d_b/√n),
//
// an unnormalized fast Walsh–Hadamard transform of each block followed by
// the same per-column factors d_j/√n that Rotate applies before it. The
// float32 rounding error is at most (log₂n + 2)·2⁻²⁴·‖x‖ per row, as for
// Rotate. dst may be x itself but must not otherwise overlap it. Large
// batches are split over the cores. It panics if the shapes do not match.
//
// Its use is folding a rotation back into weights: a matrix stored in the
// rotated basis, Ŵ' (the layer computes Ŵ'·(x·M)ᵀ), is the plain layer
// W = Ŵ'·Mᵀ, each row of W being RotateTranspose of the same row of Ŵ'
// (UnrotateWeights).
func (h *Hadamard) RotateTranspose(dst, x *tensor.Matrix) {
	if x.Cols != h.width || dst.Cols != h.width || dst.Rows != x.Rows {
		panic(fmt.Sprintf("lut.Hadamard.RotateTranspose: x %dx%d, dst %dx%d, width %d", x.Rows, x.Cols, dst.Rows, dst.Cols, h.width))
	}
	grain := (hadamardGrain + h.width - 1) / h.width
	if x.Rows < 2*grain {
		h.rotateTransposeRows(dst, x, 0, x.Rows)
		return
	}
	tensor.ParallelGrain(x.Rows, grain, func(lo, hi int) { h.rotateTransposeRows(dst, x, lo, hi) })
}

// UnrotateWeights sets w = w·Mᵀ in place for w [out, width]: weights
// W' = W·M stored in the rotated input basis become W again (M·Mᵀ = I).
// It panics if w.Cols ≠ Width().
func (h *Hadamard) UnrotateWeights(w *tensor.Matrix) { h.RotateTranspose(w, w) }

// rotateTransposeRows sets rows [lo, hi) of dst to x·Mᵀ.
func (h *Hadamard) rotateTransposeRows(dst, x *tensor.Matrix, lo, hi int) {
	n := h.block
	for t := lo; t < hi; t++ {
		out := dst.Row(t)
		src := x.Row(t)[:len(out)]
		copy(out, src) // a no-op when dst is x
		for b := 0; b < len(out); b += n {
			fwhtFrom(out[b:b+n], 1)
		}
		s := h.scale[:len(out)]
		for j := range out {
			out[j] *= s[j]
		}
	}
}
