package model_test

import (
	"fmt"
	"testing"

	"forge/model"
)

// BenchmarkVerify: a verify block of T rows (speculative decoding)
// against a plain decode step ("step") and T = 1, on
// forge-tiny (bf16, and rounded to LUT4) and the models benchModels adds
// (FORGE_BENCH_BUNDLE, FORGE_BENCH_1P4B), with int8 activations. Each
// block is committed whole, so the context grows as in decoding, within
// the decode benchmarks' window. µs/block over T is the cost per row.
func BenchmarkVerify(b *testing.B) {
	for name, dir := range benchModels(b) {
		b.Run(name+"/step", func(b *testing.B) {
			m := benchModel(b, name, dir)
			s := m.NewState()
			s.SetAct(model.ActInt8)
			mk := decodeStart(m, s)
			b.ResetTimer()
			for range b.N {
				if s.Pos()+1 > 4+decodeWindow {
					s.Rewind(mk)
				}
				m.Forward(s, []int{100})
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/block")
		})
		for _, T := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/T=%d", name, T), func(b *testing.B) {
				m := benchModel(b, name, dir)
				s := m.NewState()
				s.SetAct(model.ActInt8)
				mk := decodeStart(m, s)
				block := make([]int, T)
				for i := range block {
					block[i] = 100 + i
				}
				b.ResetTimer()
				for range b.N {
					if s.Pos()+T > 4+decodeWindow {
						s.Rewind(mk)
					}
					if _, err := m.Verify(s, block); err != nil {
						b.Fatal(err)
					}
					s.Commit(T)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/block")
			})
		}
	}
}
