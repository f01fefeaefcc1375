package quant

import (
	"fmt"
	"math"

	"forge/tensor"
)

// SNR returns the weight signal-to-noise ratio of a quantized matrix ŵ
// against the original w, in dB:
//
//	SNR = 10·log10(Σ w² / Σ (w − ŵ)²)
//
// summed in float64 (+Inf when ŵ = w). It panics if the shapes differ.
func SNR(w, what *tensor.Matrix) float64 { return WeightedSNR(w, what, nil) }

// WeightedSNR is SNR with every column j weighted by col[j] (nil: all 1),
// e.g. diag(H) to approximate the output SNR of the layer:
// 10·log10(Σ col[j]·w² / Σ col[j]·(w − ŵ)²).
func WeightedSNR(w, what *tensor.Matrix, col []float64) float64 {
	if w.Rows != what.Rows || w.Cols != what.Cols || (col != nil && len(col) != w.Cols) {
		panic(fmt.Sprintf("quant.SNR: %dx%d vs %dx%d (%d column weights)", w.Rows, w.Cols, what.Rows, what.Cols, len(col)))
	}
	var sig, noise float64
	for o := range w.Rows {
		a, b := w.Row(o), what.Row(o)
		for j := range a {
			c := 1.0
			if col != nil {
				c = col[j]
			}
			e := float64(a[j]) - float64(b[j])
			sig += c * float64(a[j]) * float64(a[j])
			noise += c * e * e
		}
	}
	if noise == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/noise)
}

// OutputSNR returns the output-space SNR of a quantized matrix ŵ against
// the original w under the input statistics h, in dB:
//
//	SNR = 10·log10( tr(W H Wᵀ) / tr(E H Eᵀ) ),   E = W − Ŵ
//
// which for H = XᵀX/N is 10·log10(‖X Wᵀ‖² / ‖X Eᵀ‖²), the layer's output
// SNR on the rows X (docs/quantization.md §3: pass the held-out rows' H for the
// held-out SNR per matrix). The caller dequantizes (lut.Matrix.Dequantize).
// Both quadratic forms are computed in float64 (W·H and E·H by the
// backend's dgemm, a few hundred rows at a time), since GPTQ leaves E
// mostly along H's small eigenvalues, where float32 sums would cancel;
// that costs 4·out·in² flops and a full in×in copy of H. A DiagHessian
// gives WeightedSNR with diag(H). +Inf when ŵ = w. OutputSNR panics if the
// shapes differ or h holds no full matrix (nil, no rows, DiagOnly).
func OutputSNR(w, what *tensor.Matrix, h *Hessian) float64 {
	if w.Rows != what.Rows || w.Cols != what.Cols || h == nil || !h.full() || h.dim() != w.Cols {
		dim := -1
		if h != nil && h.full() {
			dim = h.dim()
		}
		panic(fmt.Sprintf("quant.OutputSNR: %dx%d vs %dx%d with a Hessian of width %d (−1: none)", w.Rows, w.Cols, what.Rows, what.Cols, dim))
	}
	if h.exact {
		return WeightedSNR(w, what, h.Diag())
	}
	hm := h.Matrix()
	out, in := w.Rows, w.Cols
	const chunk = 256
	a := make([]float64, 2*min(chunk, out)*in) // [W rows; E rows] of the chunk
	c := make([]float64, len(a))               // a·H
	var sig, noise float64
	for r0 := 0; r0 < out; r0 += chunk {
		m := min(chunk, out-r0)
		wr, er := a[:m*in], a[m*in:2*m*in]
		for i := range m {
			for j, v := range w.Row(r0 + i) {
				wr[i*in+j] = float64(v)
				er[i*in+j] = float64(v) - float64(what.Data[(r0+i)*in+j])
			}
		}
		la.dgemm(c[:2*m*in], a[:2*m*in], hm, 2*m, in, in)
		for k, v := range wr {
			sig += v * c[k]
		}
		for k, v := range er {
			noise += v * c[m*in+k]
		}
	}
	if noise <= 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/noise)
}
