package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// twinMatches transcribes the reference's dry_matches (alive flags per occurrence, one backward
// step at a time for all of them) as the slow twin of dryMatches.
func twinMatches(h []int32, b *Breakers, maxMatch int) map[int32]int {
	best := map[int32]int{}
	L := len(h)
	if L < 2 || b.Is(h[L-1]) {
		return best
	}
	var P []int
	for p := range L - 1 {
		if h[p] == h[L-1] {
			P = append(P, p)
		}
	}
	m, alive := make([]int, len(P)), make([]bool, len(P))
	for i := range P {
		m[i], alive[i] = 1, true
	}
	for k := 1; k < maxMatch && k <= L-1; k++ {
		if b.Is(h[L-1-k]) {
			break
		}
		for i, p := range P {
			alive[i] = alive[i] && p-k >= 0 && h[p-k] == h[L-1-k]
			if alive[i] {
				m[i]++
			}
		}
	}
	for i, p := range P {
		best[h[p+1]] = max(best[h[p+1]], m[i])
	}
	return best
}

// twinDist is the slow twin of Dist: every step written out plainly on the whole vocabulary, with
// full sorts, in the order of the package doc.
func twinDist(o Options, b *Breakers, logits []float32, reply []int32) map[int32]float64 {
	V := len(logits)
	all := make([]cand, V)
	for i, x := range logits {
		all[i] = cand{key(x), int32(i)}
	}
	slices.SortFunc(all, cmpDesc)
	k := V
	if o.TopK > 0 {
		k = min(o.TopK, V)
	}
	c := slices.Clone(all[:k])
	seen := map[int32]bool{}
	for _, id := range reply {
		seen[id] = true
	}
	d := o.DRY.resolved()
	var dry map[int32]int
	if o.DRY.Multiplier > 0 && len(reply) > d.Allowed {
		dry = twinMatches(reply[max(0, len(reply)-d.Window):], b, d.MaxMatch)
	}
	for i := range c {
		if seen[c[i].id] {
			c[i].v -= o.Presence
		}
		if n, ok := dry[c[i].id]; ok && n >= d.Allowed {
			c[i].v -= d.Multiplier * math.Pow(d.Base, float64(min(n-d.Allowed, 24)))
		}
	}
	m := math.Inf(-1)
	for _, e := range c {
		m = max(m, e.v)
	}
	var sum float64
	for i := range c {
		c[i].v = math.Exp((c[i].v - m) / o.Temperature)
		sum += c[i].v
	}
	for i := range c {
		c[i].v /= sum
	}
	c = slices.DeleteFunc(c, func(e cand) bool { return e.v == 0 })
	slices.SortFunc(c, cmpDesc)
	if o.TopP > 0 && o.TopP < 1 {
		cum, n := 0.0, len(c)
		for i, e := range c {
			if cum += e.v; cum >= o.TopP {
				n = i + 1
				break
			}
		}
		c = c[:n]
		normalize(c)
	}
	if o.MinP > 0 {
		thr := o.MinP * c[0].v
		c = slices.DeleteFunc(c, func(e cand) bool { return e.v < thr })
		normalize(c)
	}
	out := map[int32]float64{}
	for _, e := range c {
		out[e.id] = e.v
	}
	return out
}

// Random vocabularies, options and replies: Dist equals the twin. The tolerance covers summing
// the same terms in a different order (softmax sums in id order on the fast path).
func TestDistMatchesTwin(t *testing.T) {
	const twinTol = 1e-12
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		V := 2 + r.IntN(700)
		lg := make([]float32, V)
		for i := range lg {
			lg[i] = float32(math.Round(r.NormFloat64()*8) / 4) // quarter steps: ties happen
		}
		b := NewBreakers(V, func(id int) string {
			if id%7 == 3 {
				return "\n"
			}
			return "a"
		})
		o := Options{
			Temperature: []float64{0.3, 0.7, 1, 2}[r.IntN(4)],
			TopK:        []int{0, 0, 1, 5, 20, 64, 65, 200, V}[r.IntN(9)],
			TopP:        []float64{0, 0.5, 0.9, 0.95, 0.999}[r.IntN(5)],
			MinP:        []float64{0, 0, 0.01, 0.2}[r.IntN(4)],
			Presence:    []float64{0, 0.5, 1.5, -1}[r.IntN(4)],
			DRY:         DRY{Multiplier: []float64{0, 0.8}[r.IntN(2)], Allowed: 1 + r.IntN(4), Window: []int{0, 16}[r.IntN(2)]},
		}
		s := New(o, b, V)
		var reply []int32
		for range r.IntN(60) {
			id := int32(r.IntN(min(V, 12))) // a small alphabet: repeats and DRY matches
			reply = append(reply, id)
			s.Accept(int(id))
		}
		ids, p := s.Dist(lg)
		want := twinDist(o, b, lg, reply)
		if len(ids) != len(want) {
			t.Fatalf("trial %d %+v: %d candidates, twin %d", trial, o, len(ids), len(want))
		}
		for i, id := range ids {
			w, ok := want[id]
			if !ok || math.Abs(p[i]-w) > twinTol {
				t.Fatalf("trial %d %+v: id %d p %.17g, twin %.17g (present %v)", trial, o, id, p[i], w, ok)
			}
			if o.TopK > 0 && o.TopK < V && i > 0 && better(cand{p[i], id}, cand{p[i-1], ids[i-1]}) {
				t.Fatalf("trial %d %+v: ids not in descending order at %d", trial, o, i)
			}
			if (o.TopK == 0 || o.TopK >= V) && i > 0 && id <= ids[i-1] {
				t.Fatalf("trial %d %+v: ids not in id order at %d", trial, o, i)
			}
		}
		got := map[int32]int{}
		dryMatches(&s.table, s.hist[max(0, len(s.hist)-s.dry.Window):], b, s.dry.MaxMatch)
		for _, id := range s.table.ids {
			got[id] = int(s.table.len[id])
		}
		if o.DRY.Multiplier > 0 {
			tw := twinMatches(reply[max(0, len(reply)-s.dry.Window):], b, s.dry.MaxMatch)
			if len(got) != len(tw) {
				t.Fatalf("trial %d: matches %v, twin %v", trial, got, tw)
			}
			for id, n := range tw {
				if got[id] != n {
					t.Fatalf("trial %d: matches %v, twin %v", trial, got, tw)
				}
			}
		}
	}
}
