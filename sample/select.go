package sample

import (
	"math"
	"math/bits"
	"slices"
)

// cand is one candidate token: v is its (penalized) logit until the softmax, its probability after.
type cand struct {
	v  float64
	id int32
}

// better is the candidates' total order: larger v first, then smaller id. NaN never reaches it
// (gather maps NaN logits to −Inf), so the order is strict and every selection deterministic.
func better(a, b cand) bool { return a.v > b.v || (a.v == b.v && a.id < b.id) }

func cmpDesc(a, b cand) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// key is a logit as a candidate value: NaN becomes −Inf (never chosen over a number).
func key(x float32) float64 {
	if x != x {
		return math.Inf(-1)
	}
	return float64(x)
}

// Argmax returns the index of the first largest logit. NaN entries are skipped (a NaN is never
// the maximum); −1 means logits is empty or all NaN.
func Argmax(logits []float32) int {
	best := slices.IndexFunc(logits, func(x float32) bool { return x == x })
	if best < 0 {
		return -1
	}
	bv := logits[best]
	for i := best + 1; i < len(logits); i++ {
		if x := logits[i]; x > bv { // false for NaN
			best, bv = i, x
		}
	}
	return best
}

// heapMaxK: top-k up to this k scans the logits once with a min-heap of the k best (one
// comparison per logit once the heap is full); larger k copies all logits and uses selectTop.
const heapMaxK = 64

// topKHeap writes the k best logits (total order of better) into c[:k], in no particular order.
// One comparison per logit plus O(log k) per heap replacement; logits are visited in id order, so
// a later equal value never displaces an earlier one, as better requires.
func topKHeap(c []cand, logits []float32, k int) []cand {
	h, i := c[:0], 0
	for ; i < len(logits) && len(h) < k; i++ {
		h = append(h, cand{key(logits[i]), int32(i)})
		siftUp(h, len(h)-1)
	}
	for thr := h[0].v; i < len(logits); i++ {
		// a later id loses ties, so only a strictly larger logit enters (never a NaN)
		if x := float64(logits[i]); x > thr {
			h[0] = cand{x, int32(i)}
			siftDown(h, 0)
			thr = h[0].v
		}
	}
	return h
}

// The heap keeps the worst candidate at the root.
func siftUp(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []cand, i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// selectTop reorders c so that c[:k] holds its k best candidates (in no particular order):
// quickselect with a median-of-three pivot, O(len(c)) expected; past 2·log2(len(c)) rounds it
// sorts the remaining segment, bounding the worst case by O(n log n).
func selectTop(c []cand, k int) {
	if k <= 0 || k >= len(c) {
		return
	}
	lo, hi := 0, len(c)
	for depth := 2 * bits.Len(uint(len(c))); hi-lo > 12; depth-- {
		if depth == 0 {
			break
		}
		p, _ := partition(c[lo:hi])
		p += lo
		switch {
		case p == k || p+1 == k:
			return
		case k < p:
			hi = p
		default:
			lo = p + 1
		}
	}
	slices.SortFunc(c[lo:hi], cmpDesc)
}

// partition puts a median-of-three pivot at its final place in c and returns that index and the
// sum of v over the candidates before it (better than the pivot; those after are worse).
func partition(c []cand) (int, float64) {
	n := len(c)
	// median of three: afterwards c[m] is the middle one of c[0], c[n/2], c[n−1] in better's order.
	i, m, l := 0, n/2, n-1
	if better(c[m], c[i]) {
		i, m = m, i
	}
	if better(c[l], c[m]) { // c[m] is the worst: the median is the worse of c[i] and c[l]
		if better(c[l], c[i]) {
			m = i
		} else {
			m = l
		}
	}
	c[m], c[n-1] = c[n-1], c[m]
	pv, w, sum := c[n-1], 0, 0.0
	for j := range n - 1 {
		if better(c[j], pv) {
			sum += c[j].v
			c[w], c[j] = c[j], c[w]
			w++
		}
	}
	c[w], c[n-1] = c[n-1], c[w]
	return w, sum
}

// nucleusCut returns the worst member of the top-p nucleus of c (probabilities in any order): the
// L-th best candidate, L the smallest length whose L best sum to ≥ p; the whole of c if rounding
// keeps the sum below p. It reorders c. A quickselect weighted by probability: each partition
// tells whether the better side alone reaches p, so the cost is O(len(c)) expected and nothing is
// sorted but the last ≤ 12 candidates (past 2·log2(len(c)) rounds, the remaining segment).
func nucleusCut(c []cand, p float64) cand {
	lo, hi, cum := 0, len(c), 0.0 // cum: the mass of c[:lo], all better than c[lo:hi]
	for depth := 2 * bits.Len(uint(len(c))); hi-lo > 12 && depth > 0; depth-- {
		q, left := partition(c[lo:hi])
		q += lo
		switch {
		case cum+left >= p: // the nucleus ends before the pivot
			hi = q
		case cum+left+c[q].v >= p:
			return c[q]
		default:
			cum += left + c[q].v
			lo = q + 1
		}
	}
	slices.SortFunc(c[lo:hi], cmpDesc)
	for _, e := range c[lo:hi] {
		if cum += e.v; cum >= p {
			return e
		}
	}
	return c[hi-1]
}
