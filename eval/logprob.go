package eval

import (
	"cmp"
	"math"
	"slices"
)

// TailFloor is the smallest candidate tail mass a top-K KL takes the log
// of. The candidate's tail q_tail is a sum of probabilities, so it is 0
// only when K equals the vocabulary (then the reference tail is 0 too and
// the tail term vanishes) or when every probability outside the top K
// underflows float64 (log-probs below about −745). In that second case,
// with a reference tail p_tail > 0, q_tail is taken as TailFloor, which
// bounds the tail term at p_tail·(log p_tail + 69.08).
const TailFloor = 1e-30

// LogSumExp returns the log-partition of softmax(z), len(z) ≥ 1:
//
//	L = m + log Σ_i exp(z_i − m)   m = max_i z_i
//
// every step in float64 (z_i − m is exact there), the sum in index order,
// so no exp overflows. It is forge's one log-sum-exp: LogSoftmax, NLL,
// eval/lcpp's Score and the root's ppl and logits use it.
func LogSumExp(z []float32) float64 {
	m := float64(z[0])
	for _, v := range z[1:] {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// LogSoftmax writes the log-softmax of the logits z to dst (len(dst) ≥
// len(z)) and returns the log-partition L = LogSumExp(z):
//
//	dst[i] = float32(z_i − L)   (the difference in float64)
//
// Trace and Score both call it, so a candidate identical to the reference
// gets bit-identical log-probs (and a KL of exactly 0). The reference NLL
// of token t is L − z_t, computed in float64 from the logits themselves
// (NLL).
func LogSoftmax(dst, z []float32) float64 {
	L := LogSumExp(z)
	for i, v := range z {
		dst[i] = float32(float64(v) - L)
	}
	return L
}

// NLL returns the negative log-likelihood of token y under softmax(z),
// in nats:
//
//	NLL(z, y) = −log softmax(z)_y = L − z_y   (L = LogSumExp(z), in float64)
//
// so exp(−NLL(z, y)) is the probability of y.
func NLL(z []float32, y int) float64 {
	return LogSumExp(z) - float64(z[y])
}

// Argmax returns the index of the largest value of x (len(x) ≥ 1), the
// first on ties.
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// topK returns the K most likely entries of the log-probs lp, most likely
// first, ties broken by the lower id (so ids[0] is Argmax(lp)), and the
// tail mass Σ_{i∉top-K} exp(lp_i) summed in float64 in id order (tailMass).
// heap is scratch of at least k entries.
func topK(ids []int32, lps []float32, lp []float32, mask []bool, heap []int32) float64 {
	k := len(ids)
	h := heap[:0]
	// worse(a, b): a ranks below b.
	worse := func(a, b int32) bool {
		return lp[a] < lp[b] || (lp[a] == lp[b] && a > b)
	}
	for i := range lp {
		id := int32(i)
		if len(h) < k {
			h = append(h, id)
			siftUp(h, len(h)-1, worse)
			continue
		}
		if worse(h[0], id) {
			h[0] = id
			siftDown(h, 0, worse)
		}
	}
	slices.SortFunc(h, func(a, b int32) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return cmp.Compare(a, b)
	})
	for j, id := range h {
		ids[j], lps[j] = id, lp[id]
	}
	return tailMass(lp, ids, mask)
}

// tailMass returns Σ exp(lp_i) over the ids not in top, summed in float64
// in id order. mask (len(lp) entries, all false) is scratch and is left
// all false. It reports -1 if top holds an id twice or outside the range.
func tailMass(lp []float32, top []int32, mask []bool) float64 {
	for j, id := range top {
		if id < 0 || int(id) >= len(lp) || mask[id] {
			for _, u := range top[:j] {
				mask[u] = false
			}
			return -1
		}
		mask[id] = true
	}
	var s float64
	for i, v := range lp {
		if !mask[i] {
			s += math.Exp(float64(v))
		}
	}
	for _, id := range top {
		mask[id] = false
	}
	return s
}

// siftUp and siftDown keep h a heap whose root is its worst entry.
func siftUp(h []int32, i int, worse func(a, b int32) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []int32, i int, worse func(a, b int32) bool) {
	for {
		l, w := 2*i+1, i
		if l < len(h) && worse(h[l], h[w]) {
			w = l
		}
		if r := l + 1; r < len(h) && worse(h[r], h[w]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// KLFull returns KL(p‖q) in nats between the distributions whose
// log-probs are lp (reference) and lq (candidate), both renormalized in
// float64 (float32 log-probs sum to 1 only to about 1e-7):
//
//	S_p = Σ_i e^{lp_i},  S_q = Σ_i e^{lq_i}
//	KL  = Σ_i (e^{lp_i}/S_p)·((lp_i − log S_p) − (lq_i − log S_q))
//	    = (Σ_i e^{lp_i}·(lp_i − lq_i))/S_p − log S_p + log S_q
//
// Renormalizing makes KL ≥ 0 up to float64 rounding (Gibbs' inequality
// holds for the normalized pair) and exactly 0 when lp and lq are the same
// bits. A p_i that underflows to 0 contributes nothing (0·log 0 = 0).
func KLFull(lp, lq []float32) float64 {
	var sp, sq, a float64
	for i, v := range lp {
		ep := math.Exp(float64(v))
		sp += ep
		sq += math.Exp(float64(lq[i]))
		if ep != 0 {
			a += ep * (float64(v) - float64(lq[i]))
		}
	}
	return a/sp - math.Log(sp) + math.Log(sq)
}

// KLTopK returns the coarsened KL(p‖q) in nats over K+1 buckets: the
// reference's top-K tokens ids (log-probs lps) and one tail bucket of
// mass tail = Σ_{i∉ids} p_i. The candidate (full log-probs lq) is bucketed
// the same way, q_tail = Σ_{i∉ids} e^{lq_i} (qTail; Score sums it with
// tailMass and rounds it to float32 as the trace stores p_tail, so an
// identical candidate gives identical buckets and a KL of 0), and both
// bucket sets are renormalized in float64 as in KLFull:
//
//	KL = Σ_{k} p̂_k (log p̂_k − log q̂_k) + p̂_tail (log p̂_tail − log q̂_tail)
//
// with p̂ = p/(Σ_k p_k + p_tail), q̂ likewise. The tail term is 0 when
// p_tail = 0; q_tail is floored at TailFloor. This is the seed evaluator's
// top-256 + tail definition; with K = vocabulary it equals KLFull.
func KLTopK(ids []int32, lps []float32, tail float64, lq []float32, qTail float64) float64 {
	var sp, sq, a float64
	for k, id := range ids {
		v := float64(lps[k])
		ep := math.Exp(v)
		sp += ep
		sq += math.Exp(float64(lq[id]))
		if ep != 0 {
			a += ep * (v - float64(lq[id]))
		}
	}
	sp += tail
	sq += qTail
	if tail > 0 {
		a += tail * (math.Log(tail) - math.Log(max(qTail, TailFloor)))
	}
	return a/sp - math.Log(sp) + math.Log(sq)
}
