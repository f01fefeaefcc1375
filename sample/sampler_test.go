package sample

import (
	"math"
	"slices"
	"testing"
)

// tol: the expected probabilities are formulas in math.Exp on exactly representable logits, so
// the only differences are float64 roundings of exp, sums and divisions (~1e-16 relative).
const tol = 1e-12

type want struct {
	ids []int32
	p   []float64
}

// norm divides by the sum.
func norm(w ...float64) []float64 {
	var s float64
	for _, x := range w {
		s += x
	}
	out := make([]float64, len(w))
	for i, x := range w {
		out[i] = x / s
	}
	return out
}

func exps(z ...float64) []float64 {
	out := make([]float64, len(z))
	for i, x := range z {
		out[i] = math.Exp(x)
	}
	return out
}

// check runs Dist after accepting hist and compares ids (in order) and probabilities.
func check(t *testing.T, name string, o Options, b *Breakers, logits []float32, hist []int, w want) {
	t.Helper()
	s := New(o, b, len(logits))
	for _, id := range hist {
		s.Accept(id)
	}
	ids, p := s.Dist(logits)
	if !slices.Equal(ids, w.ids) {
		t.Errorf("%s: ids %v, want %v (p %v)", name, ids, w.ids, p)
		return
	}
	for i := range p {
		if math.Abs(p[i]-w.p[i]) > tol {
			t.Errorf("%s: p[%d] (id %d) = %.17g, want %.17g", name, i, ids[i], p[i], w.p[i])
		}
	}
}

func f32(xs ...float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

func TestTopK(t *testing.T) {
	lg := f32(1, 3, 2, 3, 0)
	check(t, "k 2: the tied maxima", Options{Temperature: 1, TopK: 2}, nil, lg, nil,
		want{[]int32{1, 3}, norm(1, 1)})
	check(t, "k 3", Options{Temperature: 1, TopK: 3}, nil, lg, nil,
		want{[]int32{1, 3, 2}, norm(exps(3, 3, 2)...)})
	check(t, "k ≥ V keeps all, id order", Options{Temperature: 1, TopK: 9}, nil, lg, nil,
		want{[]int32{0, 1, 2, 3, 4}, norm(exps(1, 3, 2, 3, 0)...)})
	check(t, "off", Options{Temperature: 1}, nil, lg, nil,
		want{[]int32{0, 1, 2, 3, 4}, norm(exps(1, 3, 2, 3, 0)...)})
	// ties at the boundary: the smaller ids stay.
	check(t, "tie at the boundary", Options{Temperature: 1, TopK: 2}, nil, f32(1, 2, 1, 1), nil,
		want{[]int32{1, 0}, norm(exps(2, 1)...)})

	// k above heapMaxK takes the quickselect path: ℓ_i = −i/8 over 130 ids, k = 65 → ids 0…64.
	lg = make([]float32, 130)
	for i := range lg {
		lg[i] = float32(-float64(i) / 8)
	}
	w := want{}
	for i := range 65 {
		w.ids = append(w.ids, int32(i))
		w.p = append(w.p, math.Exp(-float64(i)/8))
	}
	w.p = norm(w.p...)
	check(t, "k 65 (quickselect)", Options{Temperature: 1, TopK: 65}, nil, lg, nil, w)
	slices.Reverse(lg) // the same values in ascending id order: ids 129…65
	for i := range w.ids {
		w.ids[i] = 129 - w.ids[i]
	}
	check(t, "k 65 reversed", Options{Temperature: 1, TopK: 65}, nil, lg, nil, w)
}

func TestPresence(t *testing.T) {
	lg := f32(2, 1, 0)
	// token 0 seen: z = 2 − 1.5 = 0.5; accepting it twice changes nothing (not a count).
	check(t, "top-k off", Options{Temperature: 1, Presence: 1.5}, nil, lg, []int{0, 0},
		want{[]int32{0, 1, 2}, norm(exps(0.5, 1, 0)...)})
	check(t, "top-k 2", Options{Temperature: 1, TopK: 2, Presence: 1.5}, nil, lg, []int{0},
		want{[]int32{1, 0}, norm(exps(1, 0.5)...)})
	// presence applies before temperature: the repeated token's odds fall by exp(−1.5/T).
	check(t, "T 2", Options{Temperature: 2, Presence: 1.5}, nil, lg, []int{0},
		want{[]int32{0, 1, 2}, norm(exps(0.25, 0.5, 0)...)})
	// the seen token outside the top-k set stays out: 2 is seen but never a candidate.
	check(t, "seen outside top-k", Options{Temperature: 1, TopK: 2, Presence: 1.5}, nil, lg, []int{2},
		want{[]int32{0, 1}, norm(exps(2, 1)...)})
	check(t, "negative presence", Options{Temperature: 1, Presence: -1}, nil, lg, []int{2},
		want{[]int32{0, 1, 2}, norm(exps(2, 1, 1)...)})
}

func TestTemperature(t *testing.T) {
	lg := f32(0, 1, 2)
	check(t, "T 0.5", Options{Temperature: 0.5}, nil, lg, nil, want{[]int32{0, 1, 2}, norm(exps(0, 2, 4)...)})
	check(t, "T 2", Options{Temperature: 2}, nil, lg, nil, want{[]int32{0, 1, 2}, norm(exps(0, 0.5, 1)...)})
}

// ℓ = 3 2 1 0: p = e^3, e^2, e, 1 over S ≈ 31.19 = 0.6439, 0.2369, 0.0871, 0.0321.
func TestTopP(t *testing.T) {
	lg := f32(3, 2, 1, 0)
	p := norm(exps(3, 2, 1, 0)...)
	// top-k off: the block search.
	o := Options{Temperature: 1}
	o.TopP = 0.8 // cumulative 0.6439, 0.8808 → 2
	check(t, "0.8", o, nil, lg, nil, want{[]int32{0, 1}, norm(exps(3, 2)...)})
	o.TopP = 0.9 // … 0.9679 → 3
	check(t, "0.9", o, nil, lg, nil, want{[]int32{0, 1, 2}, norm(exps(3, 2, 1)...)})
	o.TopP = 0.5 // the first already reaches it
	check(t, "0.5", o, nil, lg, nil, want{[]int32{0}, []float64{1}})
	// top-k 3, the sorted set: p = e^3, e^2, e over 30.19 = 0.6652, 0.2447, 0.0900.
	o.TopK = 3
	o.TopP = 0.8 // 0.6652, 0.9100 → 2
	check(t, "k3 0.8", o, nil, lg, nil, want{[]int32{0, 1}, norm(exps(3, 2)...)})
	o.TopP = 0.92 // → 3
	check(t, "k3 0.92", o, nil, lg, nil, want{[]int32{0, 1, 2}, norm(exps(3, 2, 1)...)})
	o.TopP = 0.5
	check(t, "k3 0.5", o, nil, lg, nil, want{[]int32{0}, []float64{1}})
	// 0.99 with top-k off keeps all four.
	check(t, "0.99", Options{Temperature: 1, TopP: 0.99}, nil, lg, nil, want{[]int32{0, 1, 2, 3}, p})
	// with top-k off the nucleus is listed in id order; with top-k, in descending order.
	check(t, "shuffled", Options{Temperature: 1, TopP: 0.9}, nil, f32(1, 3, 0, 2), nil,
		want{[]int32{0, 1, 3}, norm(exps(1, 3, 2)...)})
	check(t, "shuffled top-k", Options{Temperature: 1, TopK: 3, TopP: 0.99}, nil, f32(1, 3, 0, 2), nil,
		want{[]int32{1, 3, 0}, norm(exps(3, 2, 1)...)})
	// an exact boundary: four equal tokens, p = 0.25 each, sums exact. The prefix reaching 0.5 is
	// two tokens (the reference: searchsorted(cumsum, top_p, "left") + 1).
	check(t, "exact boundary", Options{Temperature: 1, TopP: 0.5}, nil, f32(0, 0, 0, 0), nil,
		want{[]int32{0, 1}, norm(1, 1)})
	check(t, "exact boundary top-k", Options{Temperature: 1, TopK: 4, TopP: 0.5}, nil, f32(0, 0, 0, 0, -1), nil,
		want{[]int32{0, 1}, norm(1, 1)})
	// the same past the quickselect's 12-candidate cut-off: 16 equal tokens, 0.5 → 8.
	w := want{ids: []int32{0, 1, 2, 3, 4, 5, 6, 7}, p: norm(1, 1, 1, 1, 1, 1, 1, 1)}
	check(t, "exact boundary 16", Options{Temperature: 1, TopP: 0.5}, nil, make([]float32, 16), nil, w)
	// 0.5625 = 9/16: the median pivot (id 8) itself completes the sum → 9.
	w = want{ids: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}, p: norm(1, 1, 1, 1, 1, 1, 1, 1, 1)}
	check(t, "exact boundary at the pivot", Options{Temperature: 1, TopP: 0.5625}, nil, make([]float32, 16), nil, w)
	check(t, "1 is off", Options{Temperature: 1, TopP: 1}, nil, f32(1, 3, 0, 2), nil,
		want{[]int32{0, 1, 2, 3}, norm(exps(1, 3, 0, 2)...)})
}

// A large nucleus: ℓ_i = −i/1024 over 5000 ids, p_i ∝ r^i with r = e^(−1/1024); the cumulative
// sum (1−r^n)/(1−r^V) first reaches 0.9 at the smallest n with r^n ≤ 1 − 0.9(1−r^V), so
// n = ⌈−1024·ln(1 − 0.9(1−r^V))⌉ = 2291.
func TestTopPLargeNucleus(t *testing.T) {
	const V = 5000
	lg := make([]float32, V)
	for i := range lg {
		lg[i] = float32(-float64(i) / 1024) // exact: i < 2^24
	}
	r := math.Exp(-1.0 / 1024)
	n := int(math.Ceil(-1024 * math.Log(1-0.9*(1-math.Pow(r, V)))))
	if n != 2291 {
		t.Fatalf("n = %d, want 2291", n)
	}
	w := want{}
	for i := range n {
		w.ids = append(w.ids, int32(i))
		w.p = append(w.p, math.Exp(-float64(i)/1024))
	}
	w.p = norm(w.p...)
	check(t, "ascending ids", Options{Temperature: 1, TopP: 0.9}, nil, lg, nil, w)
	// the same values in reverse id order: ids V−n…V−1, still listed in id order.
	slices.Reverse(lg)
	for i := range w.ids {
		w.ids[i] = int32(V - n + i)
	}
	slices.Reverse(w.p)
	check(t, "descending ids", Options{Temperature: 1, TopP: 0.9}, nil, lg, nil, w)
}

func TestMinP(t *testing.T) {
	// ids 0…3 hold ℓ 1 3 0 2: p = e, e^3, 1, e^2 over S. max p = e^3/S.
	lg := f32(1, 3, 0, 2)
	// 0.1: threshold 0.1·e^3/S; kept p/p_max = e^−2 = 0.135 and e^−1; e^−3 = 0.0498 out. Id order.
	check(t, "0.1", Options{Temperature: 1, MinP: 0.1}, nil, lg, nil, want{[]int32{0, 1, 3}, norm(exps(1, 3, 2)...)})
	// 0.3: only e^−1 = 0.368 beside the maximum.
	check(t, "0.3", Options{Temperature: 1, MinP: 0.3}, nil, lg, nil, want{[]int32{1, 3}, norm(exps(3, 2)...)})
	check(t, "1: the maximum", Options{Temperature: 1, MinP: 1}, nil, lg, nil, want{[]int32{1}, []float64{1}})
	// after top-p 0.9 (keeps 3 of 4), min-p 0.3 of the renormalized maximum: e^−1 stays, e^−2 goes.
	check(t, "after top-p", Options{Temperature: 1, TopP: 0.9, MinP: 0.3}, nil, lg, nil,
		want{[]int32{1, 3}, norm(exps(3, 2)...)})
	check(t, "with top-k 3", Options{Temperature: 1, TopK: 3, MinP: 0.2}, nil, lg, nil,
		want{[]int32{1, 3}, norm(exps(3, 2)...)})
}

// The whole chain on one hand-worked example:
//
//	ℓ = 4 3.5 3 2.5 2 1.5 1 0.5 (ids 0…7); top-k 6 → C = {0…5}.
//	reply 4 5 6 2 4 5 6: seen {2, 4, 5, 6}; presence 0.5 on 2, 4, 5 (6 ∉ C).
//	DRY: last 6 at 6, P = 2 extends over h[1] = 5, h[0] = 4 → {2: 3}; Allowed 2, Base 2,
//	Multiplier 1 → 1·2^(3−2) = 2 on token 2.
//	z = 4, 3.5, 0.5, 2.5, 1.5, 1; T = 0.5 → z/T = 8, 7, 1, 5, 3, 2.
//	sorted p ∝ e^8 (0), e^7 (1), e^5 (3), e^3 (4), e^2 (5), e^1 (2); S ≈ 4256.2:
//	0.7004, 0.2577, 0.0349, 0.0047, 0.0017, 0.0006.
//	top-p 0.99: cumulative 0.7004, 0.9580, 0.9929 → {0, 1, 3}.
//	min-p 0.1: p3/p0 = e^−3 = 0.0498 < 0.1 → {0, 1}: 1/(1+e^−1), e^−1/(1+e^−1).
func TestChain(t *testing.T) {
	lg := f32(4, 3.5, 3, 2.5, 2, 1.5, 1, 0.5)
	hist := []int{4, 5, 6, 2, 4, 5, 6}
	o := Options{Temperature: 0.5, TopK: 6, Presence: 0.5, DRY: DRY{Multiplier: 1, Base: 2, Allowed: 2}}
	check(t, "penalties", o, nil, lg, hist, want{[]int32{0, 1, 3, 4, 5, 2}, norm(exps(8, 7, 5, 3, 2, 1)...)})
	o.TopP = 0.99
	check(t, "+ top-p", o, nil, lg, hist, want{[]int32{0, 1, 3}, norm(exps(8, 7, 5)...)})
	o.MinP = 0.1
	check(t, "+ min-p", o, nil, lg, hist, want{[]int32{0, 1}, norm(exps(8, 7)...)})
	// the same without penalties keeps token 2 (z/T = 6) in the nucleus.
	o.Presence, o.DRY = 0, DRY{}
	check(t, "no penalties", o, nil, lg, hist, want{[]int32{0, 1, 2}, norm(exps(8, 7, 6)...)})
}

func TestGreedy(t *testing.T) {
	lg := f32(1, 3, 2, 3)
	// presence and DRY would push token 1 far down; greedy ignores them (and top-k/p, min-p).
	o := Options{TopK: 1, TopP: 0.1, MinP: 0.9, Presence: 100, DRY: DRY{Multiplier: 100, Allowed: 1}}
	s := New(o, nil, len(lg))
	for range 5 {
		s.Accept(1)
		s.Accept(0)
	}
	for range 3 {
		if got := s.Sample(lg); got != 1 {
			t.Fatalf("greedy Sample = %d, want 1 (first maximum)", got)
		}
		if ids, p := s.Dist(lg); !slices.Equal(ids, []int32{1}) || !slices.Equal(p, []float64{1}) {
			t.Fatalf("greedy Dist = %v %v, want [1] [1]", ids, p)
		}
	}
}

func TestArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		lg   []float32
		want int
	}{
		{f32(1, 3, 3, 2), 1},
		{[]float32{nan, 1, nan, 2}, 3},
		{[]float32{2, nan, 1}, 0},
		{[]float32{nan, nan}, -1},
		{nil, -1},
		{[]float32{-inf, -inf}, 0},
		{[]float32{1, inf, nan, inf}, 1},
	} {
		if got := Argmax(tc.lg); got != tc.want {
			t.Errorf("Argmax(%v) = %d, want %d", tc.lg, got, tc.want)
		}
	}
}

// NaN and infinite logits: NaN never chosen, −Inf has p = 0 and leaves the set, +Inf logits
// share the mass; nothing finite → empty Dist and Sample −1.
func TestNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	check(t, "NaN", Options{Temperature: 1}, nil, f32(nan, 0, nan, 0), nil, want{[]int32{1, 3}, norm(1, 1)})
	check(t, "NaN top-k", Options{Temperature: 1, TopK: 3}, nil, f32(nan, 0, nan, 0), nil,
		want{[]int32{1, 3}, norm(1, 1)})
	check(t, "-Inf", Options{Temperature: 1}, nil, f32(-inf, 0, 1, -inf), nil, want{[]int32{1, 2}, norm(exps(0, 1)...)})
	check(t, "+Inf", Options{Temperature: 1, Presence: 1}, nil, f32(0, inf, 1, inf), []int{1},
		want{[]int32{1, 3}, norm(1, 1)})
	for _, tc := range []struct {
		o  Options
		lg []float32
	}{
		{Options{Temperature: 1}, f32(nan, nan, nan)},
		{Options{Temperature: 1}, f32(-inf, nan, -inf)},
		{Options{Temperature: 1, TopK: 2}, f32(-inf, nan, -inf)},
		{Options{}, f32(nan, nan, nan)}, // greedy: −Inf is a number, all NaN is not
	} {
		s := New(tc.o, nil, 3)
		if ids, _ := s.Dist(tc.lg); len(ids) != 0 {
			t.Errorf("%+v: Dist(%v) = %v, want empty", tc.o, tc.lg, ids)
		}
		if got := s.Sample(tc.lg); got != -1 {
			t.Errorf("%+v: Sample(%v) = %d, want -1", tc.o, tc.lg, got)
		}
	}
}

// Dist's buffers are reused: a second call overwrites the first's result, as documented.
func TestDistReusesBuffers(t *testing.T) {
	s := New(Options{Temperature: 1}, nil, 3)
	ids1, _ := s.Dist(f32(0, 0, 0))
	ids2, _ := s.Dist(f32(0, 0, -1))
	if &ids1[0] != &ids2[0] {
		t.Error("Dist allocated a new ids slice")
	}
}

func TestResetClearsReply(t *testing.T) {
	lg := f32(2, 1, 0)
	o := Options{Temperature: 1, Presence: 1.5, DRY: DRY{Multiplier: 1, Allowed: 1}}
	s := New(o, nil, 3)
	ids0, p0 := s.Dist(lg)
	ids0, p0 = slices.Clone(ids0), slices.Clone(p0)
	for _, id := range []int{0, 1, 0, 1} {
		s.Accept(id)
	}
	if _, p := s.Dist(lg); slices.Equal(p, p0) {
		t.Fatal("presence and DRY had no effect")
	}
	s.Reset()
	if ids, p := s.Dist(lg); !slices.Equal(ids, ids0) || !slices.Equal(p, p0) {
		t.Errorf("after Reset: %v %v, want %v %v", ids, p, ids0, p0)
	}
}
