package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bestK is the slow twin of the selections: sort everything, take the first k ids.
func bestK(logits []float32, k int) []int32 {
	c := make([]cand, len(logits))
	for i, x := range logits {
		c[i] = cand{key(x), int32(i)}
	}
	slices.SortFunc(c, cmpDesc)
	ids := make([]int32, k)
	for i := range ids {
		ids[i] = c[i].id
	}
	slices.Sort(ids)
	return ids
}

func idsOf(c []cand) []int32 {
	ids := make([]int32, len(c))
	for i, e := range c {
		ids[i] = e.id
	}
	slices.Sort(ids)
	return ids
}

// logit patterns that stress selection: many ties, NaN and ±Inf, sorted and reversed orders.
func patterns(r *rand.Rand, n int) map[string][]float32 {
	p := map[string][]float32{}
	add := func(name string, f func(i int) float32) {
		lg := make([]float32, n)
		for i := range lg {
			lg[i] = f(i)
		}
		p[name] = lg
	}
	add("normal", func(int) float32 { return float32(r.NormFloat64() * 3) })
	add("ties", func(int) float32 { return float32(r.IntN(5)) })
	add("all equal", func(int) float32 { return 1 })
	add("ascending", func(i int) float32 { return float32(i) })
	add("descending", func(i int) float32 { return float32(-i) })
	add("organ pipe", func(i int) float32 { return float32(min(i, n-i)) })
	add("non-finite", func(int) float32 {
		switch r.IntN(6) {
		case 0:
			return float32(math.NaN())
		case 1:
			return float32(math.Inf(-1))
		case 2:
			return float32(math.Inf(1))
		}
		return float32(r.IntN(3))
	})
	return p
}

func TestSelectionMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 13, 100, 1000} {
		for name, lg := range patterns(r, n) {
			for _, k := range []int{1, 2, 5, heapMaxK, heapMaxK + 1, n / 3, n - 1, n} {
				if k < 1 || k > n {
					continue
				}
				want := bestK(lg, k)
				c := make([]cand, n)
				if got := idsOf(topKHeap(c, lg, k)); !slices.Equal(got, want) {
					t.Errorf("%s n=%d k=%d: heap %v, want %v", name, n, k, got, want)
				}
				for i, x := range lg {
					c[i] = cand{key(x), int32(i)}
				}
				selectTop(c, k)
				if got := idsOf(c[:k]); !slices.Equal(got, want) {
					t.Errorf("%s n=%d k=%d: quickselect %v, want %v", name, n, k, got, want)
				}
			}
		}
	}
}

// Through the Sampler: with top-k the candidate set is exactly the k best (ties: smaller id),
// for both the heap (k ≤ heapMaxK) and the quickselect path.
func TestTopKSetMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, lg := range patterns(r, 500) {
		for _, k := range []int{1, 20, heapMaxK, heapMaxK + 1, 300} {
			s := New(Options{Temperature: 1e9, TopK: k}, nil, len(lg)) // high T: no probability underflows
			ids, _ := s.Dist(lg)
			got := slices.Sorted(slices.Values(ids))
			want := bestK(lg, k)
			// −Inf (and NaN) candidates get p = 0 and leave the set; +Inf ones take all the mass.
			want = slices.DeleteFunc(want, func(id int32) bool { return math.IsInf(key(lg[id]), -1) })
			if hasPosInf(lg, want) {
				want = slices.DeleteFunc(want, func(id int32) bool { return !math.IsInf(float64(lg[id]), 1) })
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s k=%d: candidates %v, want %v", name, k, got, want)
			}
		}
	}
}

func hasPosInf(lg []float32, ids []int32) bool {
	for _, id := range ids {
		if math.IsInf(float64(lg[id]), 1) {
			return true
		}
	}
	return false
}

// nucleusCut against the definition: sort, accumulate, stop at the first cumulative ≥ p. The cut
// sums in another order, so at a boundary met within rounding (p = 0.9 over 3000 equal tokens is
// met exactly at 2700) either neighbour is right: the test asks that the prefix ending at the cut
// reach p and the one before it fall short, each within cutTol.
func TestNucleusCutMatchesSort(t *testing.T) {
	const cutTol = 1e-12
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 13, 100, 3000} {
		for name, lg := range patterns(r, n) {
			c := make([]cand, 0, n)
			for i, x := range lg {
				if v := key(x); !math.IsInf(v, 0) {
					c = append(c, cand{v, int32(i)})
				}
			}
			if len(c) == 0 {
				continue
			}
			c = softmax(c, 4)
			sorted := slices.Clone(c)
			slices.SortFunc(sorted, cmpDesc)
			for _, p := range []float64{1e-9, 0.1, 0.5, 0.9, 0.95, 0.999999, 1} {
				got := nucleusCut(slices.Clone(c), p)
				at := slices.Index(sorted, got)
				var before float64
				for _, e := range sorted[:at] {
					before += e.v
				}
				if !(before < p+cutTol) || !(before+got.v >= p-cutTol || at == len(sorted)-1) {
					t.Errorf("%s n=%d p=%g: cut at %d of %d: Σ before %.17g, with it %.17g",
						name, n, p, at, len(sorted), before, before+got.v)
				}
			}
		}
	}
}
