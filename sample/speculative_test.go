package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fixed is a Uniform that returns its values in turn.
type fixed []float64

func (f *fixed) Float64() float64 {
	v := (*f)[0]
	*f = (*f)[1:]
	return v
}

// TestAcceptByHand: p = (.5, .3, .2), q = (.2, .6, .2). Draft 1 is kept
// when u < p/q = .5, otherwise the residual max(p − q, 0) = (.3, 0, 0)
// gives token 0 whatever the second draw. Draft 0 (p/q = 2.5) and draft 2
// (p/q = 1) are always kept. Point masses accept exactly the argmax and
// otherwise return it; an empty p is not ok.
func TestAcceptByHand(t *testing.T) {
	p := Dist{IDs: []int32{0, 1, 2}, Probs: []float64{.5, .3, .2}}
	q := Dist{IDs: []int32{2, 0, 1}, Probs: []float64{.2, .2, .6}} // any order
	cases := []struct {
		draft    int
		u        fixed
		tok      int
		accepted bool
	}{
		{1, fixed{0.49}, 1, true},
		{1, fixed{0.51, 0.999}, 0, false},
		{1, fixed{0.99, 0}, 0, false},
		{0, fixed{0.999}, 0, true},
		{2, fixed{0.999}, 2, true},
	}
	for _, c := range cases {
		u := c.u
		tok, acc, ok := Accept(p, q, c.draft, &u)
		if !ok || tok != c.tok || acc != c.accepted || len(u) != 0 {
			t.Errorf("draft %d, u %v: got %d accepted %v ok %v (%d draws left), want %d %v",
				c.draft, c.u, tok, acc, ok, len(u), c.tok, c.accepted)
		}
	}
	point := func(id int32) Dist { return Dist{IDs: []int32{id}, Probs: []float64{1}} }
	for _, c := range []struct{ argmax, draft, tok int }{{5, 5, 5}, {5, 7, 5}} {
		u := fixed{0.999999, 0.5}
		tok, acc, ok := Accept(point(int32(c.argmax)), point(int32(c.draft)), c.draft, &u)
		if !ok || tok != c.tok || acc != (c.argmax == c.draft) {
			t.Errorf("greedy argmax %d draft %d: got %d accepted %v", c.argmax, c.draft, tok, acc)
		}
	}
	if tok, _, ok := Accept(Dist{}, point(3), 3, &fixed{0.5}); ok || tok != -1 {
		t.Errorf("empty p: got %d ok %v", tok, ok)
	}
}

// TestAcceptIsExact: drafting from q and deciding with Accept gives tokens
// distributed as p, for random p and q over 12 tokens with partly
// disjoint supports (each of 400,000 trials). The test is Pearson's
// chi-square against p at 11 degrees of freedom: 40 is beyond the 99.99th
// percentile (31.3), so an exact rule fails it with probability < 1e-4,
// while returning the draft unchecked (distributed as q) scores in the
// thousands. The acceptance rate must be Σ min(p, q) within 5 standard
// errors.
func TestAcceptIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const V, N = 12, 400_000
	for trial := range 3 {
		p, q := randDist(r, V, 2), randDist(r, V, 3)
		pv, qv := dense(p, V), dense(q, V)
		var count [V]float64
		accepted := 0
		for range N {
			draft := drawFrom(q.IDs, q.Probs, r.Float64(), 1)
			tok, acc, ok := Accept(p, q, draft, r)
			if !ok {
				t.Fatal("not ok")
			}
			count[tok]++
			if acc {
				accepted++
			}
		}
		chi := 0.0
		for i := range V {
			if e := pv[i] * N; e > 0 {
				chi += (count[i] - e) * (count[i] - e) / e
			} else if count[i] > 0 {
				t.Fatalf("trial %d: token %d has p = 0 but came %v times", trial, i, count[i])
			}
		}
		if chi > 40 {
			t.Errorf("trial %d: chi-square %.1f against p", trial, chi)
		}
		want := 0.0
		for i := range V {
			want += math.Min(pv[i], qv[i])
		}
		se := math.Sqrt(want * (1 - want) / N)
		if got := float64(accepted) / N; math.Abs(got-want) > 5*se {
			t.Errorf("trial %d: acceptance %.4f, want Σ min(p, q) = %.4f", trial, got, want)
		}
	}
}

// randDist is a random distribution over V ids with every zeroEvery-th id
// (offset by a random amount) left out, listed in a shuffled order.
func randDist(r *rand.Rand, V, zeroEvery int) Dist {
	var d Dist
	off := r.IntN(zeroEvery)
	sum := 0.0
	for id := range V {
		if (id+off)%zeroEvery == 0 {
			continue
		}
		w := r.Float64() + 0.05
		d.IDs = append(d.IDs, int32(id))
		d.Probs = append(d.Probs, w)
		sum += w
	}
	for i := range d.Probs {
		d.Probs[i] /= sum
	}
	r.Shuffle(len(d.IDs), func(i, j int) {
		d.IDs[i], d.IDs[j] = d.IDs[j], d.IDs[i]
		d.Probs[i], d.Probs[j] = d.Probs[j], d.Probs[i]
	})
	return d
}

func dense(d Dist, V int) []float64 {
	out := make([]float64, V)
	for i, id := range d.IDs {
		out[id] = d.Probs[i]
	}
	return out
}

// TestDistLookup: the three ways lookup finds a probability (scan, binary
// search over increasing ids, map) agree with Prob.
func TestDistLookup(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{10, 40} {
		d := randDist(r, n, 4)
		sorted := Dist{IDs: make([]int32, 0), Probs: make([]float64, 0)}
		pv := dense(d, n)
		for id, p := range pv {
			if p > 0 {
				sorted.IDs = append(sorted.IDs, int32(id))
				sorted.Probs = append(sorted.Probs, p)
			}
		}
		for _, x := range []Dist{d, sorted} {
			f := x.lookup()
			for id := range n + 3 {
				if got, want := f(int32(id)), x.Prob(id); got != want {
					t.Fatalf("n %d id %d: lookup %v, Prob %v", n, id, got, want)
				}
			}
		}
	}
}
