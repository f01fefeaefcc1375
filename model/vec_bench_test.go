package model

import (
	"fmt"
	"math"
	"testing"
)

// BenchmarkRowOps: the row loops of a decode step on one core, each on
// rows of forge-tiny's widths (256, 768) and the synth-1.4b's (2048,
// 6912): RMSNorm (sumSquares, then mulScale) and SwiGLU (actRows with
// AVX-512); ns a row.
func BenchmarkRowOps(b *testing.B) {
	for _, n := range []int{256, 768, 2048, 6912} {
		x, w, d := vecInputs(n, 1), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i] = x[i]/(1+float32(math.Abs(float64(x[i])))), 1+float32(i%7)/8 // finite, of one scale
		}
		b.Run(fmt.Sprintf("rmsnorm/%d", n), func(b *testing.B) {
			for b.Loop() {
				rmsNorm(d, x, w, 1e-6)
			}
		})
		b.Run(fmt.Sprintf("swiglu/%d", n), func(b *testing.B) {
			for b.Loop() {
				copy(d, x)
				swiglu(d, w)
			}
		})
	}
}
