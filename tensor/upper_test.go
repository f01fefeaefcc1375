package tensor

import (
	"math"
	"testing"
)

var expSink float64

// BenchmarkExpAfterAVX measures math.Exp (SSE code) right after a vector
// kernel has run through the pool, against the same loop with no kernel
// before it: with the upper register halves left dirty by AVX code the
// first costs ~100× the second on some x86 cores (ClearUpper).
func BenchmarkExpAfterAVX(b *testing.B) {
	w, x, dst := New(64, 64), New(1, 64), New(1, 64)
	d := DenseF32(64, 64, w.Data)
	for _, kernel := range []bool{false, true} {
		name := "alone"
		if kernel {
			name = "after-kernel"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if kernel && i%1000 == 0 {
					d.Mul(dst, x)
				}
				expSink += math.Exp(-float64(i%50) * 0.3)
			}
		})
	}
}
