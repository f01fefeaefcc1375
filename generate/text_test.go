package generate

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStopperNeverLeaks: text fed in random pieces is released so that
// everything released is always a prefix of the final text (no prefix of
// a stop string that then matches is ever shown), the final text is cut
// before the earliest match, and without a match everything is released.
func TestStopperNeverLeaks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	stops := []string{"STOP", "\n\n", "ab"}
	for trial := range 2000 {
		n := r.IntN(40)
		var b strings.Builder
		for range n {
			b.WriteByte("aSTOPb\nxy"[r.IntN(9)])
		}
		text := b.String()
		want := text
		for _, s := range stops {
			if i := strings.Index(text, s); i >= 0 && i < len(want) {
				want = text[:i]
			}
		}
		st := newStopper(stops)
		released, hit := "", false
		for rest := text; rest != "" && !hit; {
			k := 1 + r.IntN(min(4, len(rest)))
			var out string
			out, hit = st.add(rest[:k])
			rest = rest[k:]
			released += out
			if !strings.HasPrefix(want, released) {
				t.Fatalf("trial %d %q: released %q, not a prefix of %q", trial, text, released, want)
			}
		}
		if !hit {
			released += st.release()
		}
		if released != want || st.all() != want || hit != (want != text) {
			t.Fatalf("trial %d %q: released %q (hit %v), all %q, want %q", trial, text, released, hit, st.all(), want)
		}
	}
}

// TestStopperHoldsOnlyPrefixes: only a tail that could still become a stop
// string is held back, and it is released when the text moves on.
func TestStopperHoldsOnlyPrefixes(t *testing.T) {
	st := newStopper([]string{"</end>"})
	steps := []struct{ in, out string }{
		{"hello <", "hello "},
		{"/e", ""},
		{"x", "</ex"},
		{"</en", ""},
		{"d>", ""},
	}
	for i, s := range steps {
		out, hit := st.add(s.in)
		if out != s.out || hit != (i == len(steps)-1) {
			t.Fatalf("step %d add(%q) = %q, %v; want %q", i, s.in, out, hit, s.out)
		}
	}
	if st.all() != "hello </ex" {
		t.Fatalf("text %q", st.all())
	}
	none := newStopper(nil)
	if out, hit := none.add("a\n"); out != "a\n" || hit {
		t.Fatalf("no stops: %q %v", out, hit)
	}
	if out, _ := none.add(""); out != "" {
		t.Fatalf("empty add released %q", out)
	}
}

func TestLoopPeriod(t *testing.T) {
	rep := func(unit []int, n int, prefix ...int) []int {
		out := append([]int(nil), prefix...)
		for range n {
			out = append(out, unit...)
		}
		return out
	}
	tests := []struct {
		name string
		out  []int
		want int
	}{
		{"too short", rep([]int{1, 2, 3, 4}, 5), 0},
		{"period 4 six times", rep([]int{1, 2, 3, 4}, 6), 4},
		{"period 4 after other text", rep([]int{1, 2, 3, 4}, 6, 9, 9, 8), 4},
		{"period 2 is below the minimum, seen as 4", rep([]int{1, 2}, 12), 4},
		{"period 5", rep([]int{1, 2, 3, 4, 5}, 7), 5},
		{"one token differs", append(rep([]int{1, 2, 3, 4}, 6), 7), 0},
		{"constant run seen as period 4", rep([]int{3}, 30), 4},
		{"five repetitions are not enough", rep([]int{1, 2, 3, 4, 5, 6}, 5), 0},
	}
	for _, tc := range tests {
		if got := LoopPeriod(tc.out, LoopReps, LoopMinPeriod, LoopMaxPeriod); got != tc.want {
			t.Errorf("%s: period %d, want %d", tc.name, got, tc.want)
		}
	}
	long := rep(seq(256), 6)
	if got := LoopPeriod(long, LoopReps, LoopMinPeriod, LoopMaxPeriod); got != 256 {
		t.Errorf("period 256: got %d", got)
	}
	if got := LoopPeriod(rep(seq(257), 6), LoopReps, LoopMinPeriod, LoopMaxPeriod); got != 0 {
		t.Errorf("period 257 is over the maximum: got %d", got)
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 100
	}
	return s
}
