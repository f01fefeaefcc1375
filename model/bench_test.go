package model_test

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"forge/bundle"
	"forge/internal/membw"
	"forge/internal/tinylut"
	"forge/model"
)

// Benchmarks on forge-tiny, on forge-tiny-lut4 (forge-tiny with every
// quantizable matrix rounded to `LUT4 per-tensor + pcs` in memory, what
// `forge quantize --format 'LUT4 per-tensor + pcs'` writes), on the bundle
// FORGE_BENCH_BUNDLE names, if any, and, when FORGE_BENCH_1P4B names a
// directory made by `forge synth --config ../shared/bench/synth-1.4b/config.json`,
// on the 1.4B-parameter benchmark shape. Decode reports GB/s of weights
// read per token and that as a percentage of the 2-thread read bandwidth
// measured by internal/membw in the same process (the limit a decode step
// can reach).

var (
	bwOnce sync.Once
	bw     float64
)

func readBandwidth() float64 {
	bwOnce.Do(func() { bw = membw.Read(0, 0) })
	return bw
}

// benchNames are the benchmark models in report order.
var benchNames = []string{"forge-tiny", "forge-tiny-lut4", "bundle", "synth-1.4b"}

func benchModels(b *testing.B) map[string]string {
	tiny := repoPath("models", "forge-tiny")
	ms := map[string]string{"forge-tiny": tiny, "forge-tiny-lut4": tiny}
	if d := os.Getenv("FORGE_BENCH_BUNDLE"); d != "" {
		ms["bundle"] = d
	}
	if d := os.Getenv("FORGE_BENCH_1P4B"); d != "" {
		ms["synth-1.4b"] = d
	}
	return ms
}

var (
	lut4Once  sync.Once
	lut4Model *model.Model
	lut4Err   error
)

// benchModel loads the benchmark model name from dir: forge-tiny-lut4 is
// quantized once per process, a bundle is opened as one.
func benchModel(b *testing.B, name, dir string) *model.Model {
	b.Helper()
	switch name {
	case "forge-tiny-lut4":
		lut4Once.Do(func() { lut4Model, lut4Err = tinylut.Load(dir) })
		if lut4Err != nil {
			b.Fatal(lut4Err)
		}
		return lut4Model
	case "bundle":
		bu, err := bundle.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { bu.Close() })
		m, err := model.Load(bu)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	return loadModel(b, dir)
}

// decodeWindow is the number of decode steps run from a 4-token prompt
// before the benchmarks rewind to it, so that every step attends to at most
// 4 + decodeWindow positions however long the benchmark runs (and never
// passes the model's context).
const decodeWindow = 256

// decodeStart prefills s with a 4-token prompt, reserves the KV cache for
// the window and marks the point decodeSteps rewinds to.
func decodeStart(m *model.Model, s *model.State) model.Mark {
	m.Forward(s, []int{1, 2, 3, 4})
	s.Reserve(decodeWindow)
	return s.Mark()
}

// decodeSteps runs n decode steps (model.Forward of one token) on s,
// rewinding to start after every decodeWindow steps.
func decodeSteps(m *model.Model, s *model.State, start model.Mark, n int) {
	tok := []int{5}
	for i := range n {
		if i%decodeWindow == 0 && i > 0 {
			s.Rewind(start)
		}
		tok[0] = (i * 7919) % m.Config().Vocab
		m.Forward(s, tok)
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range benchNames {
		dir, ok := benchModels(b)[name]
		if !ok {
			continue
		}
		for _, act := range []model.Act{model.ActFloat32, model.ActInt8} {
			b.Run(name+"/act="+act.String(), func(b *testing.B) { benchDecode(b, name, dir, act) })
		}
	}
}

// benchDecode is one case of BenchmarkDecode: model name at activation
// precision act.
func benchDecode(b *testing.B, name, dir string, act model.Act) {
	m := benchModel(b, name, dir)
	limit := readBandwidth()
	s := m.NewState()
	s.SetAct(act)
	start := decodeStart(m, s)
	b.ReportAllocs()
	b.ResetTimer()
	decodeSteps(m, s, start, b.N)
	sec := b.Elapsed().Seconds()
	gbs := float64(m.WeightBytes()) * float64(b.N) / sec / 1e9
	b.ReportMetric(float64(b.N)/sec, "tok/s")
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(100*gbs/limit, "%bw")
	b.ReportMetric(limit, "bwGB/s")
}

// BenchmarkDecodeConcurrent decodes from 1 and from 2 goroutines at once,
// each with its own State of one shared Model, and reports the total
// tokens per second: concurrent users share the default worker pool
// (issue 11's aim: two streams ≥ 1.6× one).
func BenchmarkDecodeConcurrent(b *testing.B) {
	for _, name := range benchNames {
		dir, ok := benchModels(b)[name]
		if !ok {
			continue
		}
		m := benchModel(b, name, dir)
		for _, streams := range []int{1, 2} {
			b.Run(name+"/streams="+strconv.Itoa(streams), func(b *testing.B) {
				states := make([]*model.State, streams)
				starts := make([]model.Mark, streams)
				for i := range states {
					states[i] = m.NewState()
					starts[i] = decodeStart(m, states[i])
				}
				var wg sync.WaitGroup
				b.ResetTimer()
				for i, s := range states {
					wg.Add(1)
					go func() {
						defer wg.Done()
						decodeSteps(m, s, starts[i], b.N)
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
				m := benchModel(b, name, dir)
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
