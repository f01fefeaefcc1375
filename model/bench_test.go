package model_test

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"forge/internal/membw"
	"forge/model"
)

// Benchmarks on forge-tiny and, when FORGE_BENCH_1P4B names a directory made
// by `forge synth --config ../shared/bench/synth-1.4b/config.json`, on the
// 1.4B-parameter benchmark shape. Decode reports GB/s of weights read per
// token and that as a percentage of the 2-thread read bandwidth measured by
// internal/membw in the same process (the limit a decode step can reach).

var (
	bwOnce sync.Once
	bw     float64
)

func readBandwidth() float64 {
	bwOnce.Do(func() { bw = membw.Read(0, 0) })
	return bw
}

func benchModels(b *testing.B) map[string]string {
	ms := map[string]string{"forge-tiny": repoPath("models", "forge-tiny")}
	if d := os.Getenv("FORGE_BENCH_1P4B"); d != "" {
		ms["synth-1.4b"] = d
	}
	return ms
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"forge-tiny", "synth-1.4b"} {
		dir, ok := benchModels(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			m := loadModel(b, dir)
			limit := readBandwidth()
			s := m.NewState()
			s.Reserve(b.N + 64)
			m.Forward(s, []int{1, 2, 3, 4})
			tok := []int{5}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tok[0] = (i * 7919) % m.Config().Vocab
				m.Forward(s, tok)
			}
			sec := b.Elapsed().Seconds()
			gbs := float64(m.WeightBytes()) * float64(b.N) / sec / 1e9
			b.ReportMetric(float64(b.N)/sec, "tok/s")
			b.ReportMetric(gbs, "GB/s")
			b.ReportMetric(100*gbs/limit, "%bw")
			b.ReportMetric(limit, "bwGB/s")
		})
	}
}

// BenchmarkDecodeConcurrent decodes from 1 and from 2 goroutines at once,
// each with its own State of one shared Model, and reports the total
// tokens per second: concurrent users share the default worker pool
// (issue 11's aim: two streams ≥ 1.6× one).
func BenchmarkDecodeConcurrent(b *testing.B) {
	for _, name := range []string{"forge-tiny", "synth-1.4b"} {
		dir, ok := benchModels(b)[name]
		if !ok {
			continue
		}
		m := loadModel(b, dir)
		for _, streams := range []int{1, 2} {
			b.Run(name+"/streams="+strconv.Itoa(streams), func(b *testing.B) {
				states := make([]*model.State, streams)
				for i := range states {
					states[i] = m.NewState()
					states[i].Reserve(b.N + 64)
					m.Forward(states[i], []int{1, 2, 3, 4})
				}
				var wg sync.WaitGroup
				b.ResetTimer()
				for _, s := range states {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tok := []int{5}
						for i := range b.N {
							tok[0] = (i * 7919) % m.Config().Vocab
							m.Forward(s, tok)
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(streams*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

func BenchmarkPrefill(b *testing.B) {
	for _, name := range []string{"forge-tiny", "synth-1.4b"} {
		dir, ok := benchModels(b)[name]
		if !ok {
			continue
		}
		for _, T := range []int{128, 512} {
			b.Run(name+"/T"+strconv.Itoa(T), func(b *testing.B) {
				m := loadModel(b, dir)
				toks := make([]int, T)
				for i := range toks {
					toks[i] = (i * 31) % m.Config().Vocab
				}
				var s *model.State
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s = m.NewState()
					m.Forward(s, toks)
				}
				b.ReportMetric(float64(T*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
