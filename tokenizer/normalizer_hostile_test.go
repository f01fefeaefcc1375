package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// insertionOrder is the canonical ordering as the Unicode standard states it, a stable
// insertion sort within runs of non-starters: canonicalOrder's reference twin.
func insertionOrder(buf []cccRune) {
	for i := 1; i < len(buf); i++ {
		c, j := buf[i], i
		for c.ccc != 0 && j > 0 && buf[j-1].ccc > c.ccc {
			buf[j] = buf[j-1]
			j--
		}
		buf[j] = c
	}
}

// TestCanonicalOrderLinear: canonicalOrder sorts like the insertion sort, on random runs short
// and long, and a run of 50,000 marks of alternating classes (220, 230; the insertion sort's
// worst case, with 625 million moves) costs at most 2 moves a mark.
func TestCanonicalOrderLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	classes := []uint8{0, 0, 1, 7, 202, 220, 220, 230, 230, 232, 240}
	for range 2000 {
		buf := make([]cccRune, r.IntN(60))
		if r.IntN(20) == 0 {
			buf = make([]cccRune, 500+r.IntN(2000))
		}
		for i := range buf {
			buf[i] = cccRune{rune(i), classes[r.IntN(len(classes))]}
		}
		want := slices.Clone(buf)
		insertionOrder(want)
		canonicalOrder(buf)
		if !slices.Equal(buf, want) {
			t.Fatalf("%d runes: canonicalOrder differs from the insertion sort", len(buf))
		}
	}
	marks := make([]cccRune, 50_000)
	for i := range marks {
		marks[i] = cccRune{rune(i), []uint8{230, 220}[i%2]}
	}
	if work := canonicalOrder(marks); work > 2*len(marks) {
		t.Errorf("sorting %d marks took %d moves", len(marks), work)
	}
	for i, c := range marks {
		if want := []uint8{220, 230}[i*2/len(marks)]; c.ccc != want {
			t.Fatalf("mark %d has class %d", i, c.ccc)
		}
	}
}

// TestNormalizeChunks: the slow path, which normalizes long text in pieces cut before ASCII
// characters, agrees with x/text on text without long runs of marks or post-9.0 characters,
// marks right after the cuts included, and with normalizing the whole at once.
func TestNormalizeChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	pieces := []string{"a", "e", " ", "e\u0301", "\u0301", "\u0327\u0301", "\u0316\u0301", "A\u030a", "\u1100\u1161", "\uac00\u11a8", "ﬁ", "½", "x\xff"}
	for range 20 {
		var b strings.Builder
		for b.Len() < 3*slowChunk {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		for _, f := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
			u := unicodeForm{f}
			got := u.slow(text)
			if want := f.String(text); !strings.Contains(text, "\xff") && got != want {
				t.Fatalf("%v: slow differs from x/text", f)
			}
			var whole strings.Builder // the old way: every valid stretch at once
			for _, part := range strings.SplitAfter(text, "\xff") {
				part, bad := strings.CutSuffix(part, "\xff")
				for _, c := range u.normalizeRunes(nil, part) {
					whole.WriteRune(c.r)
				}
				if bad {
					whole.WriteByte(0xff)
				}
			}
			if got != whole.String() {
				t.Fatalf("%v: pieces differ from the whole", f)
			}
		}
	}
}
