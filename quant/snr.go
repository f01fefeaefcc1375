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
