package generate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"forge/internal/tinylut"
	"forge/model"
	"forge/sample"
)

// TestBatcherIsPlain: four Engines sharing a Batcher (batching on) that
// generate at the same time — greedy and sampled replies of different
// lengths from different prompts, some with a stop string — give the
// replies and logits of Engines that step alone, and most of their steps
// ran in batches of two or more. LUT4 with int8 activations (the
// multi-row kernel) and bf16.
func TestBatcherIsPlain(t *testing.T) {
	bf16, tok := tiny(t)
	lut4, err := tinylut.Load("../models/forge-tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []struct {
		name string
		m    *model.Model
		act  model.Act
	}{{"lut4-int8", lut4, model.ActInt8}, {"bf16", bf16, model.ActFloat32}} {
		t.Run(sub.name, func(t *testing.T) {
			bt := NewBatcher(sub.m, BatchOn)
			const n = 4
			reqs := make([]Request, n)
			for i := range reqs {
				reqs[i] = Request{Prompt: mustPrompt(t, tok, fmt.Sprintf("func f%d() {\n", i*7)), MaxTokens: 40 + 20*i, LoopGuard: -1}
				if i%2 == 1 {
					reqs[i].Sample = sample.Options{Temperature: 0.9, TopK: 20, Seed: uint64(i)}
				}
			}
			reqs[3].Stop = []string{"\n\n"}
			want := make([]Result, n)
			wantLg := make([][][]float32, n)
			for i, r := range reqs {
				want[i], wantLg[i] = stepLogits(t, New(sub.m, tok, Options{Act: sub.act}), r)
			}
			for round := range 3 {
				got := make([]Result, n)
				gotLg := make([][][]float32, n)
				var wg sync.WaitGroup
				for i, r := range reqs {
					wg.Go(func() {
						e := New(sub.m, tok, Options{Act: sub.act, Batcher: bt})
						var lg [][]float32
						r.Logits = func(l []float32) { lg = append(lg, slices.Clone(l)) }
						res, err := e.Generate(context.Background(), r, nil)
						if err != nil {
							t.Error(err)
						}
						got[i], gotLg[i] = res, lg
					})
				}
				wg.Wait()
				for i := range n {
					if !slices.Equal(got[i].Tokens, want[i].Tokens) || !logitsEqual(gotLg[i], wantLg[i]) {
						t.Fatalf("round %d, request %d: batched reply differs from the lone engine's", round, i)
					}
				}
			}
			st := bt.Stats()
			if st.Shared < st.Rows/2 {
				t.Fatalf("only %d of %d steps were batched with others (%d batches)", st.Shared, st.Rows, st.Batches)
			}
			t.Logf("%+v", st)
		})
	}
	if NewBatcher(bf16, BatchAuto).On() {
		t.Error("forge-tiny batches by default (its step reads a few MB: stepping apart is faster)")
	}
}
