package sample

import (
	"maps"
	"math"
	"testing"
)

// matchMap runs the matcher on h and returns its table as a map.
func matchMap(h []int32, b *Breakers, maxMatch int) map[int32]int32 {
	t := dryTable{len: make([]int32, 64)}
	dryMatches(&t, h, b, maxMatch)
	m := map[int32]int32{}
	for _, id := range t.ids {
		m[id] = t.len[id]
	}
	return m
}

// breakersOf makes a Breakers over 64 ids where the given ids are breakers.
func breakersOf(ids ...int) *Breakers {
	set := map[int]bool{}
	for _, id := range ids {
		set[id] = true
	}
	return NewBreakers(64, func(id int) string {
		if set[id] {
			return "x:"
		}
		return "x"
	})
}

// Hand-worked examples of the reference's dry_matches (§4.2). L is the history length, the last
// token sits at L−1, P are the earlier positions holding it, k the backward steps.
func TestDRYMatcher(t *testing.T) {
	for _, tc := range []struct {
		name     string
		h        []int32
		b        *Breakers
		maxMatch int
		want     map[int32]int32
	}{
		// last 3 at 6; P=2: k=1 h[1]=2=h[5], k=2 h[0]=1=h[4], k=3 P−3<0 → 3; next h[3]=4.
		{"simple repeat", []int32{1, 2, 3, 4, 1, 2, 3}, nil, 32, map[int32]int32{4: 3}},
		// last 8 at 9; P=4: k=1 h[3]=7=h[8]; k=2 suffix h[7]=9 is a breaker → stop at 2; next h[5]=5.
		{"breaker in the middle", []int32{5, 6, 9, 7, 8, 5, 6, 9, 7, 8}, breakersOf(9), 32, map[int32]int32{5: 2}},
		// the same history without breakers matches back to h[0]: k=1…4 all equal → 5.
		{"same without breakers", []int32{5, 6, 9, 7, 8, 5, 6, 9, 7, 8}, nil, 32, map[int32]int32{5: 5}},
		// last 5 at 9; P=4 matches 4,3,2,1 backwards → 5; next h[5]=1.
		{"five-token repeat", []int32{1, 2, 3, 4, 5, 1, 2, 3, 4, 5}, nil, 32, map[int32]int32{1: 5}},
		// the same capped: k runs 1…MaxMatch−1 = 2 → 3.
		{"cap at MaxMatch", []int32{1, 2, 3, 4, 5, 1, 2, 3, 4, 5}, nil, 3, map[int32]int32{1: 3}},
		{"MaxMatch 1: occurrences only", []int32{1, 2, 3, 4, 5, 1, 2, 3, 4, 5}, nil, 1, map[int32]int32{1: 1}},
		// last 9 is a breaker: nothing, although 9 occurred before.
		{"last token a breaker", []int32{9, 1, 9}, breakersOf(9), 32, map[int32]int32{}},
		{"one token", []int32{3}, nil, 32, map[int32]int32{}},
		{"empty", nil, nil, 32, map[int32]int32{}},
		{"no earlier occurrence", []int32{1, 2, 3}, nil, 32, map[int32]int32{}},
		// last 3 at 10; P=2 (next 4): k=1 h[1]=2=h[9], k=2 h[0]=1=h[8] → 3; P=6 (next 4): k=1 h[5]=2,
		// k=2 h[4]=5≠h[8]=1 → 2. The longest wins: {4: 3}.
		{"longest per next token", []int32{1, 2, 3, 4, 5, 2, 3, 4, 1, 2, 3}, nil, 32, map[int32]int32{4: 3}},
		// P=2 → next 4, length 3; P=6 → next 6, length 2 (h[4]=9≠h[8]=1).
		{"two next tokens", []int32{1, 2, 3, 4, 9, 2, 3, 6, 1, 2, 3}, nil, 32, map[int32]int32{4: 3, 6: 2}},
		// all 7: P=4 → k=1…4 → 5 (P=3 → 4, …); every next token is 7.
		{"run of one token", []int32{7, 7, 7, 7, 7, 7}, nil, 32, map[int32]int32{7: 5}},
		{"run of one token capped", []int32{7, 7, 7, 7, 7, 7}, nil, 3, map[int32]int32{7: 3}},
		// last 2 at 3; the suffix token h[2]=9 is a breaker, so P=1 keeps length 1; next h[2]=9.
		{"breaker right before the last", []int32{1, 2, 9, 2}, breakersOf(9), 32, map[int32]int32{9: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchMap(tc.h, tc.b, tc.maxMatch); !maps.Equal(got, tc.want) {
				t.Errorf("dryMatches(%v) = %v, want %v", tc.h, got, tc.want)
			}
		})
	}
}

// The matcher sees the last Window accepted tokens only.
func TestDRYWindow(t *testing.T) {
	h := []int32{1, 2, 3, 1, 2, 3} // whole: last 3, P=2 matches h[1], h[0] → {1: 3}
	for _, tc := range []struct {
		window int
		want   map[int32]int32
	}{
		{0, map[int32]int32{1: 3}}, // default 4096
		{4, map[int32]int32{1: 1}}, // [3 1 2 3]: P=0 cannot extend → {h[1]=1: 1}
		{3, map[int32]int32{}},     // [1 2 3]: no earlier 3
	} {
		s := New(Options{Temperature: 1, DRY: DRY{Multiplier: 1, Window: tc.window}}, nil, 64)
		for _, id := range h {
			s.Accept(int(id))
		}
		s.matches()
		got := map[int32]int32{}
		for _, id := range s.table.ids {
			got[id] = s.table.len[id]
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("window %d: matches = %v, want %v", tc.window, got, tc.want)
		}
	}
}

// The history buffer keeps the last Window tokens however long the reply grows.
func TestDRYHistoryCompaction(t *testing.T) {
	const w = 5
	s := New(Options{Temperature: 1, DRY: DRY{Multiplier: 1, Window: w}}, nil, 64)
	for i := range 37 {
		s.Accept(i)
		got := s.hist[max(0, len(s.hist)-w):]
		for j := range got {
			if want := int32(i - len(got) + 1 + j); got[j] != want {
				t.Fatalf("after %d tokens: window %v, want it to end at %d", i+1, got, i)
			}
		}
		if len(s.hist) > 2*w || len(got) != min(i+1, w) {
			t.Fatalf("after %d tokens: history %d, window %d", i+1, len(s.hist), len(got))
		}
	}
}

func TestNewBreakers(t *testing.T) {
	texts := []string{"a", "\n", "x:y", "\"", "**", "\r", "Ċ", "<|im_end|>", "a\nb", ""}
	b := NewBreakers(len(texts), func(id int) string { return texts[id] })
	want := []bool{false, true, true, true, true, false, false, false, true, false}
	for id, w := range want {
		if got := b.Is(int32(id)); got != w {
			t.Errorf("Is(%d) for %q = %v, want %v", id, texts[id], got, w)
		}
	}
	if b.Count() != 5 {
		t.Errorf("Count = %d, want 5", b.Count())
	}
	if b.Is(-1) || b.Is(int32(len(texts))) || b.Is(1000) {
		t.Error("ids outside the vocabulary are breakers")
	}
	var none *Breakers
	if none.Is(1) || none.Count() != 0 {
		t.Error("nil Breakers has breakers")
	}
}

// DRY alone on flat logits: the penalty Multiplier·Base^min(n−Allowed, 24) on the token that
// would extend the repeat, nothing below Allowed, and the exponent capped at 24.
func TestDRYPenalty(t *testing.T) {
	flat := make([]float32, 5)
	// history 1 2 3 1 2: last 2, P=1 extends to h[0]=1 → {3: 2}.
	hist := []int{1, 2, 3, 1, 2}
	e := math.Exp(-0.5) // 0.5·1.75^0
	check(t, "allowed 2", Options{Temperature: 1, DRY: DRY{Multiplier: 0.5, Allowed: 2}}, nil, flat, hist,
		want{ids: []int32{0, 1, 2, 3, 4}, p: norm(1, 1, 1, e, 1)})
	check(t, "allowed 3: below", Options{Temperature: 1, DRY: DRY{Multiplier: 0.5, Allowed: 3}}, nil, flat, hist,
		want{ids: []int32{0, 1, 2, 3, 4}, p: norm(1, 1, 1, 1, 1)})
	// allowed 1, base 2: 0.5·2^(2−1) = 1 on token 3.
	check(t, "allowed 1 base 2", Options{Temperature: 1, DRY: DRY{Multiplier: 0.5, Base: 2, Allowed: 1}}, nil,
		flat, hist, want{ids: []int32{0, 1, 2, 3, 4}, p: norm(1, 1, 1, math.Exp(-1), 1)})
	// Only candidates are penalized: with top-k 2 on logits favouring 3 and 4, token 3 is in C.
	lg := []float32{0, 0, 0, 2, 1}
	check(t, "top-k candidates", Options{Temperature: 1, TopK: 2, DRY: DRY{Multiplier: 0.5, Allowed: 2}}, nil, lg,
		hist, want{ids: []int32{3, 4}, p: norm(math.Exp(1.5), math.Exp(1))})
	// A breaker (token 1) before the last token cuts the match to length 1 < Allowed 2.
	b := breakersOf(1)
	check(t, "breaker", Options{Temperature: 1, DRY: DRY{Multiplier: 0.5, Allowed: 2}}, b, flat, hist,
		want{ids: []int32{0, 1, 2, 3, 4}, p: norm(1, 1, 1, 1, 1)})

	// The shortest reply that can match: 1 1 1 (n = Allowed + 1) → {1: 2}.
	check(t, "shortest", Options{Temperature: 1, DRY: DRY{Multiplier: 0.5, Allowed: 2}}, nil, make([]float32, 3),
		[]int{1, 1, 1}, want{ids: []int32{0, 1, 2}, p: norm(1, e, 1)})

	// Cap: 0…29 twice; the last 29 repeats 30 tokens → {0: 30}; Allowed 1 → exponent min(29, 24).
	var long []int
	for range 2 {
		for i := range 30 {
			long = append(long, i)
		}
	}
	s := New(Options{Temperature: 1, DRY: DRY{Multiplier: 1e-6, Base: 2, Allowed: 1, MaxMatch: 40}}, nil, 64)
	for _, id := range long {
		s.Accept(id)
	}
	ids, p := s.Dist(make([]float32, 64))
	got := math.Log(p[0] / p[1]) // ids in id order: 0 and 1
	if ids[0] != 0 || ids[1] != 1 || math.Abs(got-(-1e-6*(1<<24))) > 1e-9 {
		t.Errorf("capped penalty: log(p0/p1) = %.12g, want %.12g", got, -1e-6*(1<<24))
	}
}
