//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"testing"
)

var sseSink float32

// BenchmarkSSETransition times a loop whose iterations run one 256-bit
// add and then scalar float32 Go code (legacy-SSE instructions), with
// and without a VZEROUPPER between them: the difference is the cost of
// one switch from dirty 256-bit state to SSE code, ~130 ns an iteration
// on the AMD EPYC (Zen 3) hosts of issue 12 (BENCHMARKS.md), which is
// why vector code must not leave float32 variables, struct copies or
// MOVD/MOVQ broadcasts between its 256-bit instructions.
func BenchmarkSSETransition(b *testing.B) {
	if !archsimd.X86.AVX2() {
		b.Skip("no AVX2")
	}
	for _, clear := range []bool{false, true} {
		name := map[bool]string{false: "dirty", true: "cleared"}[clear]
		b.Run(name, func(b *testing.B) {
			var buf [8]float32
			v := archsimd.LoadFloat32x8(&buf)
			f := float32(1)
			for i := 0; b.Loop(); i++ {
				v = v.Add(v)
				v.Store(&buf)
				if clear {
					archsimd.ClearAVXUpperBits()
				}
				f = f*0.5 + buf[i&7]
			}
			archsimd.ClearAVXUpperBits()
			sseSink = f
		})
	}
}
