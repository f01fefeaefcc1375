package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// logs returns float32 natural logs of probabilities.
func logs(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = float32(math.Log(v))
	}
	return out
}

// float32 log-probs carry a relative rounding of 2^-24 ≈ 6e-8 each; on
// these O(1) log-probs the KLs below may move by a few 1e-8, so 1e-6 is a
// loose but meaningful tolerance (the values compared are ≥ 0.02).
const roundTol = 1e-6

// TestKLFullHand: a 3-token vocabulary with known p and q.
func TestKLFullHand(t *testing.T) {
	lp, lq := logs(0.5, 0.3, 0.2), logs(0.4, 0.4, 0.2)
	want := 0.5*math.Log(0.5/0.4) + 0.3*math.Log(0.3/0.4) + 0.2*math.Log(1) /* equal p and q */
	if got := KLFull(lp, lq); math.Abs(got-want) > roundTol {
		t.Errorf("KL = %.9f, want %.9f", got, want)
	}
	// KL is not symmetric: KL(q‖p) is another hand-computed number.
	back := 0.4*math.Log(0.4/0.5) + 0.4*math.Log(0.4/0.3)
	if got := KLFull(lq, lp); math.Abs(got-back) > roundTol {
		t.Errorf("KL(q‖p) = %.9f, want %.9f", got, back)
	}
	if got := KLFull(lp, lp); got != 0 {
		t.Errorf("KL(p‖p) = %g, want exactly 0", got)
	}
	// Unnormalized log-probs are renormalized: adding a constant to lq
	// changes nothing.
	shifted := slices.Clone(lq)
	for i := range shifted {
		shifted[i] += 0.5
	}
	if got := KLFull(lp, shifted); math.Abs(got-want) > roundTol {
		t.Errorf("KL against shifted q = %.9f, want %.9f", got, want)
	}
	// A zero-probability reference token contributes nothing (0·log 0 = 0).
	lp0 := append(logs(0.5, 0.5), float32(math.Inf(-1)))
	lq0 := logs(0.25, 0.25, 0.5)
	want0 := 2 * 0.5 * math.Log(0.5/0.25)
	if got := KLFull(lp0, lq0); math.Abs(got-want0) > roundTol {
		t.Errorf("KL with p_2 = 0: %.9f, want %.9f", got, want0)
	}
}

// TestKLTopKHand: top-2 + tail over a 4-token vocabulary, where the tail
// bucket merges two tokens whose probabilities differ.
func TestKLTopKHand(t *testing.T) {
	p, q := []float64{0.5, 0.3, 0.1, 0.1}, []float64{0.4, 0.4, 0.15, 0.05}
	lp, lq := logs(p...), logs(q...)
	ids, lps := make([]int32, 2), make([]float32, 2)
	mask := make([]bool, 4)
	tail := topK(ids, lps, lp, mask, make([]int32, 0, 2))
	if !slices.Equal(ids, []int32{0, 1}) || math.Abs(tail-0.2) > roundTol {
		t.Fatalf("top-2 = %v, tail %.9f; want [0 1], 0.2", ids, tail)
	}
	qTail := tailMass(lq, ids, mask)
	if math.Abs(qTail-0.2) > roundTol {
		t.Fatalf("candidate tail %.9f, want 0.2", qTail)
	}
	// Tails are equal (0.2 each), so the tail term vanishes.
	want := 0.5*math.Log(0.5/0.4) + 0.3*math.Log(0.3/0.4)
	if got := KLTopK(ids, lps, tail, lq, qTail); math.Abs(got-want) > roundTol {
		t.Errorf("top-2 KL = %.9f, want %.9f", got, want)
	}
	// Coarsening loses information: the full KL is larger by the tail's
	// internal part.
	full := want + 0.1*math.Log(0.1/0.15) + 0.1*math.Log(0.1/0.05)
	if got := KLFull(lp, lq); math.Abs(got-full) > roundTol {
		t.Errorf("full KL = %.9f, want %.9f", got, full)
	}
	// Top-1 + tail: buckets {0} and {1,2,3}.
	want1 := 0.5*math.Log(0.5/0.4) + 0.5*math.Log(0.5/0.6)
	if got := KLTopK(ids[:1], lps[:1], 0.5, lq, tailMass(lq, ids[:1], mask)); math.Abs(got-want1) > roundTol {
		t.Errorf("top-1 KL = %.9f, want %.9f", got, want1)
	}
}

// TestKLTopKFloor: a candidate whose tail underflows to 0 gets the
// documented floor instead of log 0.
func TestKLTopKFloor(t *testing.T) {
	lp := logs(0.9, 0.1)
	lq := []float32{0, float32(math.Inf(-1))}
	ids := []int32{0}
	mask := make([]bool, 2)
	qTail := tailMass(lq, ids, mask)
	if qTail != 0 {
		t.Fatalf("candidate tail %g, want 0", qTail)
	}
	got := KLTopK(ids, lp[:1], 0.1, lq, qTail)
	// q̂ = (1, 0) with the floor: 0.9·log(0.9/1) + 0.1·log(0.1/1e-30), up
	// to the 1e-30 the floor adds nowhere to the normalizer (sq = 1).
	want := 0.9*math.Log(0.9) + 0.1*(math.Log(0.1)-math.Log(TailFloor))
	if math.IsInf(got, 0) || math.IsNaN(got) || math.Abs(got-want) > roundTol {
		t.Errorf("KL = %g, want %g", got, want)
	}
	// A duplicate or out-of-range id is reported, and the mask left clean.
	if tailMass(lp, []int32{1, 1}, mask) != -1 || tailMass(lp, []int32{0, 2}, mask) != -1 || slices.Contains(mask, true) {
		t.Error("bad top-K ids not reported, or mask left dirty")
	}
}

// TestTopKAgainstSort: the heap selection equals a full sort by
// (log-prob desc, id asc), ties included, and the tail is the rest's mass.
func TestTopKAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ v, k int }{{50, 1}, {50, 7}, {50, 50}, {300, 32}} {
		z := make([]float32, tc.v)
		for i := range z {
			z[i] = float32(r.IntN(12)) // many ties
		}
		lp := make([]float32, tc.v)
		LogSoftmax(lp, z)
		ids, lps := make([]int32, tc.k), make([]float32, tc.k)
		mask := make([]bool, tc.v)
		tail := topK(ids, lps, lp, mask, make([]int32, 0, tc.k))
		order := make([]int32, tc.v)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int {
			switch {
			case lp[a] > lp[b]:
				return -1
			case lp[a] < lp[b]:
				return 1
			}
			return 0
		})
		if !slices.Equal(ids, order[:tc.k]) {
			t.Errorf("V=%d K=%d: ids %v, want %v", tc.v, tc.k, ids, order[:tc.k])
		}
		var rest float64
		for _, id := range order[tc.k:] {
			rest += math.Exp(float64(lp[id]))
		}
		if math.Abs(tail-rest) > 1e-12 || int(ids[0]) != Argmax(lp) {
			t.Errorf("V=%d K=%d: tail %g, want %g; top-1 %d, argmax %d", tc.v, tc.k, tail, rest, ids[0], Argmax(lp))
		}
	}
}

// TestLogSoftmax: against the textbook formula, without overflow for
// large logits, and argmax's first-index rule.
func TestLogSoftmax(t *testing.T) {
	z := []float32{1000, 1001, 999}
	dst := make([]float32, 3)
	L := LogSoftmax(dst, z)
	// log Σ e^{z_i} = 1001 + log(e^{-1} + 1 + e^{-2}).
	wantL := 1001 + math.Log(math.Exp(-1)+1+math.Exp(-2))
	if math.Abs(L-wantL) > 1e-12 {
		t.Errorf("L = %.15f, want %.15f", L, wantL)
	}
	for i, v := range dst {
		if want := float64(z[i]) - wantL; math.Abs(float64(v)-want) > 1e-6 {
			t.Errorf("logp[%d] = %v, want %v", i, v, want)
		}
	}
	if got := Argmax([]float32{1, 3, 3, 2}); got != 1 {
		t.Errorf("argmax with a tie = %d, want the first, 1", got)
	}
}

// TestNLL: NLL is L − z_y with L = LogSumExp = the partition LogSoftmax
// returns (bit for bit), log V for uniform logits, and its probabilities
// exp(−NLL) add up to 1 for logits far from 0 (where a naive Σ e^z
// overflows).
func TestNLL(t *testing.T) {
	z := []float32{1000, 1001, 999, -3e4}
	L := LogSoftmax(make([]float32, len(z)), z)
	if LogSumExp(z) != L {
		t.Errorf("LogSumExp %v, LogSoftmax's L %v", LogSumExp(z), L)
	}
	var sum float64
	for y := range z {
		if got := NLL(z, y); got != L-float64(z[y]) {
			t.Errorf("NLL(z, %d) = %v, want L − z = %v", y, got, L-float64(z[y]))
		}
		sum += math.Exp(-NLL(z, y))
	}
	// L ≈ 1001 carries an absolute rounding error of a few ulp(1001) ≈
	// 1e-13, which each exp(z_y − L) keeps as a relative error.
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("probabilities add up to %v", sum)
	}
	// Σ e^0 over 7 entries: log 7, exact up to the last bit of the log.
	if got := NLL(make([]float32, 7), 3); math.Abs(got-math.Log(7)) > 1e-15 {
		t.Errorf("uniform NLL %v, want log 7 = %v", got, math.Log(7))
	}
}
