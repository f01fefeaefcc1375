package sample

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// draws samples n tokens, accepting each (so presence and DRY move the distribution).
func draws(o Options, lg []float32, n int) []int {
	s := New(o, nil, len(lg))
	out := make([]int, n)
	for i := range out {
		out[i] = s.Sample(lg)
		s.Accept(out[i])
	}
	return out
}

func flatish(V int) []float32 {
	lg := make([]float32, V)
	for i := range lg {
		lg[i] = float32(i%7) / 4
	}
	return lg
}

func TestSeed(t *testing.T) {
	lg := flatish(50)
	o := Options{Temperature: 1, Presence: 0.3, DRY: DRY{Multiplier: 0.5, Allowed: 2}, Seed: 42}
	a, b := draws(o, lg, 200), draws(o, lg, 200)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different sequences")
	}
	o.Seed = 43
	// 200 draws over ~50 tokens with p ≤ 0.04 each: equal sequences have probability < 0.05^200.
	if c := draws(o, lg, 200); slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same sequence")
	}
	// Reset replays the reply: same seed state, nothing seen, no history.
	o.Seed = 42
	s := New(o, nil, len(lg))
	for range 2 {
		for i := range 200 {
			id := s.Sample(lg)
			if id != a[i] {
				t.Fatalf("draw %d after Reset: %d, want %d", i, id, a[i])
			}
			s.Accept(id)
		}
		s.Reset()
	}
}

// Goodness of fit: 200,000 draws from a fixed Dist (nothing accepted between draws, so Dist is
// constant) against its probabilities. Pearson's χ² = Σ (O−E)²/E with df = cells − 1; the test
// fails above the 0.999 quantile of χ²(df), so a correct sampler fails with probability 0.001 for a
// random seed, and never for these fixed seeds (the statistic is deterministic).
func TestChiSquare(t *testing.T) {
	const n = 200000
	for _, tc := range []struct {
		name     string
		o        Options
		lg       []float32
		df       int
		critical float64 // χ²(df) 0.999 quantile
	}{
		// top-k 8 of 10 → 8 cells, smallest p ≈ 0.042 (≈ 8,500 expected).
		{"top-k sorted set", Options{Temperature: 1, TopK: 8, Seed: 1},
			f32(2.0, 1.8, 1.5, 1.2, 1.0, 0.7, 0.5, 0.2, -5, -6), 7, 24.322},
		// top-k off → all 10 in id order, temperature 0.8, min-p dropping none.
		{"id order", Options{Temperature: 0.8, MinP: 0.01, Seed: 2},
			f32(0.2, 1.5, 0.7, 2.0, 1.0, 1.2, 0.5, 1.8, 0.1, 0.3), 9, 27.877},
		// top-p 0.9 after top-k off: a sorted nucleus of 8.
		{"nucleus", Options{Temperature: 1, TopP: 0.9, Seed: 3},
			f32(0.2, 1.5, 0.7, 2.0, 1.0, 1.2, 0.5, 1.8, 0.1, 0.3), 7, 24.322},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.o, nil, len(tc.lg))
			ids, p := s.Dist(tc.lg)
			ids, p = slices.Clone(ids), slices.Clone(p)
			df, critical := len(ids)-1, tc.critical
			if df != tc.df {
				t.Fatalf("%d cells, want %d", len(ids), tc.df+1)
			}
			pos := map[int]int{}
			for i, id := range ids {
				pos[int(id)] = i
			}
			obs := make([]int, len(ids))
			for range n {
				i, ok := pos[s.Sample(tc.lg)]
				if !ok {
					t.Fatal("drew a token outside Dist")
				}
				obs[i]++
			}
			var chi2 float64
			for i, o := range obs {
				e := n * p[i]
				if e < 5 {
					t.Fatalf("cell %d expects %.1f draws: χ² needs ≥ 5", i, e)
				}
				chi2 += (float64(o) - e) * (float64(o) - e) / e
			}
			t.Logf("χ² = %.2f, df %d, critical (α = 0.001) %.3f", chi2, df, critical)
			if chi2 > critical {
				t.Errorf("χ² = %.2f > %.3f (df %d): draws do not follow Dist", chi2, critical, df)
			}
		})
	}
}

// A sampler that ignored the probabilities must fail the same statistic: drawing uniformly from the
// same cells gives a χ² far above the critical value. This keeps TestChiSquare honest.
func TestChiSquareDetectsBias(t *testing.T) {
	const n = 200000
	lg := f32(2.0, 1.8, 1.5, 1.2, 1.0, 0.7, 0.5, 0.2)
	s := New(Options{Temperature: 1}, nil, len(lg))
	_, p := s.Dist(lg)
	r := rand.New(rand.NewPCG(1, 1))
	obs := make([]int, len(p))
	for range n {
		obs[r.IntN(len(p))]++
	}
	var chi2 float64
	for i, o := range obs {
		e := n * p[i]
		chi2 += (float64(o) - e) * (float64(o) - e) / e
	}
	const critical = 24.322 // χ²(7) 0.999 quantile
	if !(chi2 > critical) {
		t.Errorf("uniform draws: χ² = %.1f, want above %.3f", chi2, critical)
	}
}
