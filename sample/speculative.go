package sample

import (
	"slices"
	"sort"
)

// Dist is a distribution over token ids: IDs[i] has probability Probs[i]
// (Sampler.Dist's result; ids not listed have probability 0).
type Dist struct {
	IDs   []int32
	Probs []float64
}

// Prob returns the probability of id (0 when it is not listed).
func (d Dist) Prob(id int) float64 {
	for i, x := range d.IDs {
		if int(x) == id {
			return d.Probs[i]
		}
	}
	return 0
}

// lookup returns d's probability function for many queries: a scan for
// a short list, a binary search when the ids are increasing (Sampler.Dist
// with top-k off), a map otherwise.
func (d Dist) lookup() func(id int32) float64 {
	switch {
	case len(d.IDs) <= 16:
		return func(id int32) float64 { return d.Prob(int(id)) }
	case slices.IsSorted(d.IDs):
		return func(id int32) float64 {
			i := sort.Search(len(d.IDs), func(i int) bool { return d.IDs[i] >= id })
			if i < len(d.IDs) && d.IDs[i] == id {
				return d.Probs[i]
			}
			return 0
		}
	}
	m := make(map[int32]float64, len(d.IDs))
	for i, id := range d.IDs {
		m[id] += d.Probs[i]
	}
	return func(id int32) float64 { return m[id] }
}

// Uniform is a source of uniform draws in [0, 1): a Sampler's generator
// (Sampler.Float64) or a *rand.Rand.
type Uniform interface{ Float64() float64 }

// Accept decides a drafted token by the speculative sampling rule
// (Leviathan et al. 2023, Chen et al. 2023): draft was drawn from the
// drafter's distribution q, p is the target's distribution on the same
// prefix. The draft is kept with probability min(1, p(draft)/q(draft));
// otherwise the token is drawn from the residual max(p − q, 0), normalized.
// Either way the returned token is distributed exactly as p, whatever q is
// (as long as q(draft) > 0, which drawing it from q ensures). It uses one
// uniform from u, and a second on rejection.
//
// With point masses (greedy on both sides) it accepts exactly when draft
// is p's token and otherwise returns p's token. The reference pipeline
// treats the draft as a point mass even when sampling (accepting with
// probability p(draft)), which is also exact but accepts less.
//
// ok is false, with tok −1, when p is empty (no logit was a number).
func Accept(p, q Dist, draft int, u Uniform) (tok int, accepted, ok bool) {
	if len(p.IDs) == 0 {
		return -1, false, false
	}
	pd, qd := p.Prob(draft), q.Prob(draft)
	if r := u.Float64(); qd > 0 && r*qd < pd {
		return draft, true, true
	}
	// The residual max(p − q, 0) over p's support (where p is 0 it is 0).
	qOf := q.lookup()
	sum := 0.0
	for i, id := range p.IDs {
		sum += max(p.Probs[i]-qOf(id), 0)
	}
	if sum <= 0 {
		// Only rounding can get here (p ≤ q everywhere means p = q, and
		// then the draft is always kept): draw from p itself.
		return drawFrom(p.IDs, p.Probs, u.Float64(), 1), false, true
	}
	r, last := u.Float64()*sum, -1
	for i, id := range p.IDs {
		w := max(p.Probs[i]-qOf(id), 0)
		if w <= 0 {
			continue
		}
		last = i
		if r < w {
			return int(id), false, true
		}
		r -= w
	}
	return int(p.IDs[last]), false, true // r beyond the sum by rounding
}

// drawFrom returns ids[i] with probability probs[i]/total for a uniform r
// in [0, 1).
func drawFrom(ids []int32, probs []float64, r float64, total float64) int {
	r *= total
	last := -1
	for i, w := range probs {
		if w <= 0 {
			continue
		}
		last = i
		if r < w {
			return int(ids[i])
		}
		r -= w
	}
	if last < 0 {
		return -1
	}
	return int(ids[last])
}
