package generate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"forge/bundle"
	"forge/internal/tinylut"
	"forge/model"
	"forge/sample"
)

// BenchmarkGenerate: a greedy reply of up to 512 tokens to a short
// prompt by the Engine, against the plain loop of decode steps and argmax
// (greedyRef's) in the same run, on forge-tiny rounded to LUT4 in memory
// (or the bundle FORGE_BENCH_BUNDLE names), int8 activations: what the
// engine's sampling, stops, detokenization and metrics add to each token.
func BenchmarkGenerate(b *testing.B) {
	_, tok := tiny(b)
	m, err := tinylut.Load(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		b.Fatal(err)
	}
	if d := os.Getenv("FORGE_BENCH_BUNDLE"); d != "" {
		bu, err := bundle.Open(d)
		if err != nil {
			b.Fatal(err)
		}
		defer bu.Close()
		if m, err = model.Load(bu); err != nil {
			b.Fatal(err)
		}
	}
	const n = 512
	prompt := []int{100, 200, 300, 400}
	b.Run("engine", func(b *testing.B) {
		e := New(m, tok, Options{Act: model.ActInt8})
		made := 0
		for b.Loop() {
			res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: n, LoopGuard: -1}, func(string) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			made += len(res.Tokens)
		}
		b.ReportMetric(float64(made)/b.Elapsed().Seconds(), "tok/s")
	})
	b.Run("loop", func(b *testing.B) {
		s := m.NewState()
		s.SetAct(model.ActInt8)
		for b.Loop() {
			s.Reset()
			lg := m.Forward(s, prompt)
			logits := lg.Row(lg.Rows - 1)
			for range n {
				logits = m.Forward(s, []int{sample.Argmax(logits)}).Row(0)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
	})
}
