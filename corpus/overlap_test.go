package corpus

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randRows returns n rows of t ids drawn from [0, vocab) (a large vocabulary makes a
// chance repeat of a window impossible in practice: 1e5^-4 per pair of positions at w = 4).
func randRows(r *rand.Rand, n, t, vocab int) [][]int {
	rows := make([][]int, n)
	for i := range rows {
		rows[i] = make([]int, t)
		for j := range rows[i] {
			rows[i][j] = r.IntN(vocab)
		}
	}
	return rows
}

func TestOverlapsSameRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := randRows(r, 5, 40, 100000)
	got := Overlaps(a, a, 8)
	want := make([]Overlap, 5)
	for i := range want {
		want[i] = Overlap{A: i, B: i, Windows: 40 - 8 + 1}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a set against itself: %v, want %v", got, want)
	}
}

func TestOverlapsDifferentCuts(t *testing.T) {
	// The same stream cut into rows of 30 and of 45 tokens: every row of the first shares
	// windows with the rows of the second that cover it, though no row equals another.
	r := rand.New(rand.NewPCG(3, 4))
	stream := randRows(r, 1, 90, 100000)[0]
	a, b := cut(stream, 30), cut(stream, 45)
	got := Overlaps(a, b, 8)
	// a0 = s[0:30] lies in b0 = s[0:45]: 23 windows. a1 = s[30:60]: s[30:45] in b0 (8
	// windows), s[45:60] in b1 (8). a2 = s[60:90] in b1: 23.
	want := []Overlap{{0, 0, 23}, {1, 0, 8}, {1, 1, 8}, {2, 1, 23}}
	if !slices.Equal(got, want) {
		t.Fatalf("overlaps %v, want %v", got, want)
	}
}

func TestOverlapsDisjointAndShort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := randRows(r, 4, 50, 100000), randRows(r, 4, 50, 100000)
	if got := Overlaps(a, b, 8); len(got) != 0 {
		t.Fatalf("independent random rows overlap: %v", got)
	}
	// Rows shorter than the window have no windows, even when equal.
	short := [][]int{{1, 2, 3}}
	if got := Overlaps(short, short, 4); len(got) != 0 {
		t.Fatalf("rows shorter than the window overlap: %v", got)
	}
}

func TestOverlapsBoilerplate(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	common := randRows(r, 1, 20, 100000)[0] // shared text, e.g. a tool schema
	mk := func(n int) [][]int {
		rows := randRows(r, n, 30, 100000)
		for i := range rows {
			rows[i] = slices.Concat(common, rows[i])
		}
		return rows
	}
	a, b := mk(2), mk(3)
	// In two rows of a and three of b: both sets repeat it, it does not count.
	if got := Overlaps(a, b, 8); len(got) != 0 {
		t.Fatalf("text repeated on both sides counted: %v", got)
	}
	// In one row of a only: it counts, against every row of b that has it (13 windows of
	// the 20 common tokens each; the windows that run past it differ).
	got := Overlaps(a[:1], b, 8)
	want := []Overlap{{0, 0, 13}, {0, 1, 13}, {0, 2, 13}}
	if !slices.Equal(got, want) {
		t.Fatalf("text of one row of a: %v, want %v", got, want)
	}
	// A window repeated inside one row counts once per row pair.
	rep := slices.Concat(common, common)
	if got := Overlaps([][]int{rep}, [][]int{common}, 8); !slices.Equal(got, []Overlap{{0, 0, 13}}) {
		t.Fatalf("repeated window: %v", got)
	}
}
