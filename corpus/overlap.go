package corpus

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
)

// OverlapWindow is the window length, in tokens, by which forge quantize --eval-trace compares
// calibration rows with evaluation rows (Overlaps). It was measured on the bundled data
// (data/, forge-tiny's tokenizer): at 32 tokens the Go license header that most code files of
// both the training and the held-out split begin with (about 40 tokens, different years)
// made hundreds of row pairs overlap, and a run of 33 zeros matched code with prose; at 48
// and 64 none did. A shared prompt, paragraph or answer of 64 tokens or more counts wherever
// the two data sets cut their rows; a shared prompt shorter than that, followed by different
// answers, does not. (The MIT license text quoted by a prose document of each split, about
// 330 tokens, overlaps at any length: it is the same text in both.)
const OverlapWindow = 64

// Overlap is the overlap of one row of a data set with one row of another: the number of
// distinct windows of W consecutive tokens of row A that also occur in row B.
type Overlap struct {
	A, B    int // row indices in the two sets
	Windows int // distinct windows of A's row found in B's row
}

// Overlaps returns every pair of a row of a and a row of b that share a window of w
// consecutive tokens, with the number of distinct shared windows, ordered by a's row, then
// b's. A row shorter than w has no windows.
//
// A window that occurs in at least two rows of a and in at least two rows of b is text both
// data sets repeat — a system prompt with tool schemas that every agentic conversation
// carries, a license header — and is not counted: it says what kind of data both are, not
// that one holds the other's rows. (Two sets with the same rows still overlap in every
// window that is not repeated on both sides.)
//
// Windows are matched by a 64-bit hash and then compared token by token, so a hash
// collision never counts. Memory is linear in the tokens of both sets; time is linear in
// the tokens plus the pairs of rows sharing a window. It panics if w < 1.
func Overlaps(a, b [][]int, w int) []Overlap {
	if w < 1 {
		panic("corpus.Overlaps: window < 1")
	}
	seed := maphash.MakeSeed()
	ia, ib := windowIndex(a, w, seed), windowIndex(b, w, seed)
	counts := map[[2]int]int{}
	for h, xs := range ia {
		ys := ib[h]
		if len(ys) == 0 {
			continue
		}
		gbs := groups(b, ys, w)
		for _, ga := range groups(a, xs, w) {
			wa := a[ga[0].row][ga[0].pos : ga[0].pos+w]
			for _, gb := range gbs {
				wb := b[gb[0].row][gb[0].pos : gb[0].pos+w]
				if !slices.Equal(wa, wb) || len(ga) >= 2 && len(gb) >= 2 {
					continue
				}
				for _, x := range ga {
					for _, y := range gb {
						counts[[2]int{x.row, y.row}]++
					}
				}
			}
		}
	}
	out := make([]Overlap, 0, len(counts))
	for k, n := range counts {
		out = append(out, Overlap{A: k[0], B: k[1], Windows: n})
	}
	slices.SortFunc(out, func(x, y Overlap) int {
		if x.A != y.A {
			return x.A - y.A
		}
		return x.B - y.B
	})
	return out
}

// at is where a window starts.
type at struct{ row, pos int }

// windowIndex returns the distinct windows of w tokens of each row, by hash: one entry per
// row and window content, the entries of a hash in row order.
func windowIndex(rows [][]int, w int, seed maphash.Seed) map[uint64][]at {
	index := map[uint64][]at{}
	buf := make([]byte, 0, 8*w)
	for r, row := range rows {
	next:
		for p := 0; p+w <= len(row); p++ {
			win := row[p : p+w]
			buf = buf[:0]
			for _, id := range win {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
			}
			h := maphash.Bytes(seed, buf)
			xs := index[h]
			for i := len(xs) - 1; i >= 0 && xs[i].row == r; i-- {
				if slices.Equal(win, row[xs[i].pos:xs[i].pos+w]) {
					continue next
				}
			}
			index[h] = append(xs, at{r, p})
		}
	}
	return index
}

// groups splits the entries of one hash into groups of equal window content (almost always
// one group: a collision of different windows makes more).
func groups(rows [][]int, xs []at, w int) [][]at {
	var out [][]at
outer:
	for _, x := range xs {
		win := rows[x.row][x.pos : x.pos+w]
		for i, g := range out {
			if slices.Equal(win, rows[g[0].row][g[0].pos:g[0].pos+w]) {
				out[i] = append(g, x)
				continue outer
			}
		}
		out = append(out, []at{x})
	}
	return out
}
