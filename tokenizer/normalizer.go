package tokenizer

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer is a tokenizer.json normalizer: NFC, NFD, NFKC, NFKD, or a Sequence of them.
type normalizer interface {
	normalize(s string) string
}

// unicodeForm normalizes as tokenizers does, with the unicode-normalization-alignments crate,
// which differs from golang.org/x/text/unicode/norm in two ways:
//
//   - Its data is Unicode 9.0's: the marks and decompositions added since (canonInert,
//     compatInert in unicode16.go) are inert there, starters that neither decompose nor compose.
//   - It reorders and composes a run of combining marks of any length, where x/text follows
//     the Stream-Safe Text Format: after 30 non-starters it inserts U+034F COMBINING GRAPHEME
//     JOINER and starts a new run.
//
// Text that x/text's quick check finds normal and that has no inert rune is returned as is
// (Unicode 9.0's result is the same then); anything else goes through slow, which implements
// the normalization algorithm (UAX #15) with x/text's per-rune data.
type unicodeForm struct{ f norm.Form }

func (u unicodeForm) normalize(s string) string {
	// Text whose runes are all below U+0300 (no byte >= 0xCC) is in NFC already; the other
	// forms only change characters from U+00A0 on (no byte >= 0xC2).
	limit := byte(0xC2)
	if u.f == norm.NFC {
		limit = 0xCC
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= limit {
			if u.f.QuickSpanString(s) == len(s) && !u.hasInert(s[i:]) {
				return s
			}
			return u.slow(s)
		}
	}
	return s
}

func (u unicodeForm) compat() bool { return u.f == norm.NFKC || u.f == norm.NFKD }

// inert reports whether r is a starter without decomposition in Unicode 9.0 that x/text
// (Unicode 15.0) gives a combining class or a decomposition of the form's kind.
func (u unicodeForm) inert(r rune) bool {
	if r < 0x7FD || 0x3300 <= r && r < 0xA7F2 || 0xAB6A <= r && r < 0x10781 { // CJK and Hangul among them
		return false
	}
	return isCanonInert(r) || u.compat() && isCompatInert(r)
}

func (u unicodeForm) hasInert(s string) bool {
	for i := 0; i < len(s); i++ {
		// Skip by lead byte what cannot be inert: ASCII, continuation bytes, U+0000..U+07BF,
		// U+2000..U+FFFF but for U+32C0..U+32FF, U+A7C0..U+A83F and U+AB40..U+AB7F.
		switch c := s[i]; {
		case c < 0xDF:
			continue
		case c == 0xE3:
			if i+1 < len(s) && s[i+1] != 0x8B {
				continue
			}
		case c == 0xEA:
			if i+1 < len(s) && s[i+1] != 0x9F && s[i+1] != 0xA0 && s[i+1] != 0xAD {
				continue
			}
		case 0xE2 <= c && c <= 0xEF:
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[i:]); u.inert(r) {
			return true
		}
	}
	return false
}

// slowChunk is the size from which slow cuts the text before its next ASCII character.
const slowChunk = 4096

// slow normalizes s rune by rune. Bytes that are not UTF-8 pass through and, like starters,
// separate what is on either side. The text is normalized in pieces cut before an ASCII
// character once over slowChunk bytes, which is safe: an ASCII character is a starter that
// neither decomposes nor composes with what precedes it.
func (u unicodeForm) slow(s string) string {
	var out strings.Builder
	out.Grow(len(s) + len(s)/4)
	var buf []cccRune
	for len(s) > 0 {
		n := 0
		for n < len(s) && !(n >= slowChunk && s[n] < utf8.RuneSelf) {
			r, w := utf8.DecodeRuneInString(s[n:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			n += w
		}
		buf = u.normalizeRunes(buf[:0], s[:n])
		for _, c := range buf {
			out.WriteRune(c.r)
		}
		if n < len(s) && s[n] >= utf8.RuneSelf { // a byte that is not UTF-8
			out.WriteByte(s[n])
			n++
		}
		s = s[n:]
	}
	return out.String()
}

type cccRune struct {
	r   rune
	ccc uint8
}

// Hangul syllable arithmetic (Unicode §3.12).
const (
	hangulS, hangulL, hangulV, hangulT       = 0xAC00, 0x1100, 0x1161, 0x11A7
	hangulLCount, hangulVCount, hangulTCount = 19, 21, 28
	hangulSCount                             = hangulLCount * hangulVCount * hangulTCount
)

// normalizeRunes decomposes valid UTF-8 s (canonically or for compatibility), puts every run
// of non-starters in canonical order (a stable sort by combining class, whatever its length)
// and, for NFC and NFKC, composes.
func (u unicodeForm) normalizeRunes(buf []cccRune, s string) []cccRune {
	decomp := norm.NFD
	if u.compat() {
		decomp = norm.NFKD
	}
	for _, r := range s {
		switch {
		case r < 0xA0 || u.inert(r):
			buf = append(buf, cccRune{r, 0})
		case hangulS <= r && r < hangulS+hangulSCount:
			si := r - hangulS
			buf = append(buf, cccRune{hangulL + si/(hangulVCount*hangulTCount), 0},
				cccRune{hangulV + si%(hangulVCount*hangulTCount)/hangulTCount, 0})
			if t := si % hangulTCount; t != 0 {
				buf = append(buf, cccRune{hangulT + t, 0})
			}
		default:
			p := decomp.PropertiesString(string(r))
			d := p.Decomposition()
			if d == nil {
				buf = append(buf, cccRune{r, p.CCC()})
				continue
			}
			for _, r2 := range string(d) {
				buf = append(buf, cccRune{r2, norm.NFD.PropertiesString(string(r2)).CCC()})
			}
		}
	}
	canonicalOrder(buf)
	if u.f == norm.NFC || u.f == norm.NFKC {
		buf = u.compose(buf)
	}
	return buf
}

// canonicalOrder sorts every run of non-starters by combining class, stably (the canonical
// ordering algorithm), in time linear in the run's length however long, and returns the
// number of runes moved or counted, for tests.
func canonicalOrder(buf []cccRune) (work int) {
	for i := 0; i < len(buf); {
		if buf[i].ccc == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(buf) && buf[j].ccc != 0 {
			j++
		}
		work += sortRun(buf[i:j])
		i = j
	}
	return work
}

// sortRun sorts run stably by combining class: by insertion when short, else by counting.
func sortRun(run []cccRune) (work int) {
	if len(run) <= 16 {
		for i := 1; i < len(run); i++ {
			c, j := run[i], i
			for j > 0 && run[j-1].ccc > c.ccc {
				run[j] = run[j-1]
				j--
				work++
			}
			run[j] = c
		}
		return work
	}
	var start [256]int
	for _, c := range run {
		start[c.ccc]++
	}
	for k, at := 0, 0; k < len(start); k++ {
		start[k], at = at, at+start[k]
	}
	sorted := make([]cccRune, len(run))
	for _, c := range run {
		sorted[start[c.ccc]] = c
		start[c.ccc]++
	}
	copy(run, sorted)
	return 2 * len(run)
}

// compose is the canonical composition algorithm (UAX #15): each rune joins the last starter
// when no rune between them is a starter or has a class as high as its own.
func (u unicodeForm) compose(buf []cccRune) []cccRune {
	out := buf[:0]
	starter := -1 // index in out of the last starter
	for _, c := range buf {
		if starter >= 0 {
			last := out[len(out)-1]
			adjacent := starter == len(out)-1
			if adjacent || last.ccc != 0 && last.ccc < c.ccc {
				if x, ok := u.composePair(out[starter].r, c.r); ok {
					out[starter].r = x
					continue
				}
			}
		}
		if c.ccc == 0 {
			starter = len(out)
		}
		out = append(out, c)
	}
	return out
}

// composePair returns the primary composite of a and b, as in Unicode 9.0.
func (u unicodeForm) composePair(a, b rune) (rune, bool) {
	if hangulL <= a && a < hangulL+hangulLCount && hangulV <= b && b < hangulV+hangulVCount {
		return hangulS + ((a-hangulL)*hangulVCount+b-hangulV)*hangulTCount, true
	}
	if si := a - hangulS; 0 <= si && si < hangulSCount && si%hangulTCount == 0 && hangulT < b && b < hangulT+hangulTCount {
		return a + b - hangulT, true
	}
	x, ok := compositeTable()[pairKey(a, b)]
	return x, ok
}

var composites struct {
	once sync.Once
	m    map[uint64]rune // pairKey(first, second) → primary composite
}

// compositeTable maps the canonical decomposition pairs of the primary composites (the runes
// with a decomposition of two or more runes that NFC keeps) to them, but for those added after
// Unicode 9.0. The pair is the composite of all but the last rune of the full decomposition,
// and the last rune; TestCompositeTable checks every pair composes back with x/text.
func compositeTable() map[uint64]rune {
	composites.once.Do(func() {
		m := make(map[uint64]rune, 1024)
		for r := rune(0xC0); r <= unicode.MaxRune; r++ {
			if hangulS <= r && r < hangulS+hangulSCount || !utf8.ValidRune(r) || isCanonInert(r) {
				continue
			}
			d := norm.NFD.PropertiesString(string(r)).Decomposition()
			if utf8.RuneCount(d) < 2 || norm.NFC.String(string(r)) != string(r) {
				continue
			}
			last, w := utf8.DecodeLastRune(d)
			first, _ := utf8.DecodeRuneInString(norm.NFC.String(string(d[:len(d)-w])))
			m[pairKey(first, last)] = r
		}
		composites.m = m
	})
	return composites.m
}

type sequenceNormalizer []normalizer

func (q sequenceNormalizer) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}
