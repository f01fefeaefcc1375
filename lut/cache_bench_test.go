package lut

import (
	"testing"

	"forge/tensor"
)

func BenchmarkInCache(b *testing.B) {
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel", "LUT2 per-tensor + pcs"} {
		f := mustFormat(b, name)
		m := randomMatrix(b, f, 128, 4096, 0, false, 1)
		for _, T := range []int{1, 8} {
			x := randomX(T, 4096, 1)
			dst := tensor.New(T, 128)
			b.Run(benchName(f)+"/T="+string(rune('0'+T)), func(b *testing.B) {
				b.SetBytes(m.Bytes())
				for b.Loop() {
					m.Mul(dst, x)
				}
			})
		}
	}
}
