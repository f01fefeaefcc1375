package sample

import (
	"math/rand/v2"
	"testing"
)

// llmLogits imitates a language model's row: most logits N(0, 2), a few dozen well above them.
func llmLogits(V int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0))
	lg := make([]float32, V)
	for i := range lg {
		lg[i] = float32(r.NormFloat64() * 2)
	}
	for range 40 {
		lg[r.IntN(V)] += float32(6 + 4*r.Float64())
	}
	return lg
}

// allocOptions: every stage on, so that the zero-allocation claim covers all of them.
var allocOptions = map[string]Options{
	"top-k 20": {Temperature: 0.8, TopK: 20, TopP: 0.95, MinP: 0.05, Presence: 0.5,
		DRY: DRY{Multiplier: 0.8, Allowed: 2}, Seed: 1},
	"top-k off": {Temperature: 0.8, TopP: 0.95, MinP: 0.01, Presence: 0.5,
		DRY: DRY{Multiplier: 0.8, Allowed: 2}, Seed: 1},
	"top-k 100, top-p off": {Temperature: 1, TopK: 100, Presence: 0.5, DRY: DRY{Multiplier: 0.8, Allowed: 2}, Seed: 1},
}

// Sample + Accept allocate nothing per token once warm. The reply alternates two logit rows whose
// top tokens overlap, so tokens repeat and DRY finds matches.
func TestSampleNoAlloc(t *testing.T) {
	const V = 4160
	rows := [][]float32{llmLogits(V, 1), llmLogits(V, 1)}
	rows[1][0] += 20 // a different row, same top set otherwise
	for name, o := range allocOptions {
		s := New(o, nil, V)
		i := 0
		step := func() {
			s.Accept(s.Sample(rows[i%2]))
			i++
		}
		for range 100 { // warm-up (DRY history below its preallocated 2·Window)
			step()
		}
		s.matches()
		if len(s.table.ids) == 0 { // the claim must cover the DRY penalty too
			t.Fatalf("%s: no DRY match after warm-up", name)
		}
		if n := testing.AllocsPerRun(200, step); n != 0 {
			t.Errorf("%s: %v allocations per Sample+Accept, want 0", name, n)
		}
	}
}

// BenchmarkSample: one Sample + Accept at Qwen3.5's vocabulary (248,320 ids).
func BenchmarkSample(b *testing.B) {
	const V = 248320
	lg := llmLogits(V, 7)
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"topk20", Options{Temperature: 0.7, TopK: 20, TopP: 0.8, Seed: 1}},
		{"topk-off_topp0.95", Options{Temperature: 1, TopP: 0.95, Seed: 1}},
		{"greedy", Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(bc.o, nil, V)
			ids, _ := s.Dist(lg)
			n := len(ids)
			b.ReportAllocs()
			for b.Loop() {
				s.Accept(s.Sample(lg))
			}
			b.ReportMetric(float64(n), "candidates")
		})
	}
}
