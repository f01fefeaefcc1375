package tokenizer

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// refTiling is the reference twin of the hand-written patterns: Go's regexp runs every
// alternative but the lookahead ones (with \s translated to Unicode White_Space, as for the
// general fallback), and `\s+(?!\S)|\s+` is applied by its definition: the whitespace run,
// less its last rune when a non-space follows and at least one rune remains.
type refTiling struct {
	head   *regexp.Regexp
	spaces *regexp.Regexp
}

func newRefTiling(t testing.TB, head string) refTiling {
	expr, err := translateRegex(head)
	if err != nil {
		t.Fatal(err)
	}
	return refTiling{regexp.MustCompile(`^(?:` + expr + `)`), regexp.MustCompile(`^[` + spaceClass + `]+`)}
}

func (r refTiling) next(s string, i int) int {
	if loc := r.head.FindStringIndex(s[i:]); loc != nil && loc[1] > 0 {
		return i + loc[1]
	}
	loc := r.spaces.FindStringIndex(s[i:])
	if loc == nil {
		panic("no alternative matches at " + s[i:])
	}
	end := i + loc[1]
	if end == len(s) {
		return end
	}
	_, w := utf8.DecodeLastRuneInString(s[i:end])
	if end-w > i {
		return end - w
	}
	return end
}

var patternTwins = []struct {
	name string
	fast tiling
	head string // the pattern without its lookahead alternatives
}{
	{"qwen", qwenPattern{maxDigits: 1}, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+`},
	{"llama3", qwenPattern{maxDigits: 3}, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+`},
	{"gpt2", gpt2Pattern{}, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`},
}

func tiles(p tiling, s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := p.next(s, i)
		if j <= i || j > len(s) {
			panic("tiling does not advance")
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func checkTwins(t *testing.T, s string) {
	t.Helper()
	for _, tw := range patternTwins {
		ref := newRefTilingCached(t, tw.head)
		got, want := tiles(tw.fast, s), tiles(ref, s)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("%s pattern on %q:\n got %q\nwant %q", tw.name, s, got, want)
		}
	}
}

var refCache = map[string]refTiling{}

func newRefTilingCached(t testing.TB, head string) refTiling {
	if r, ok := refCache[head]; ok {
		return r
	}
	r := newRefTiling(t, head)
	refCache[head] = r
	return r
}

func TestPatternExamples(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"I'm you're THEY'LL it'ſ", []string{"I", "'m", " you", "'re", " THEY", "'LL", " it", "'ſ"}},
		{"a   b", []string{"a", "  ", " b"}},
		{"x  \n\n  y\t\tz  ", []string{"x", "  \n\n", " ", " y", "\t", "\tz", "  "}},
		{"12345 3.14", []string{"1", "2", "3", "4", "5", " ", "3", ".", "1", "4"}},
		{"\tfunc main() {\n\treturn\n}\n", []string{"\tfunc", " main", "()", " {\n", "\treturn", "\n", "}\n"}},
		{"  {x}", []string{" ", " {", "x", "}"}},
		{"\u00a0nbsp\u3000wide", []string{"\u00a0nbsp", "\u3000wide"}},
		{"日本語のテキスト、漢字。", []string{"日本語のテキスト", "、漢字", "。"}},
		{"a\r\n\r\nb", []string{"a", "\r\n\r\n", "b"}},
		{"--\r\n", []string{"--\r\n"}},
		{"😀👍🏽x", []string{"😀👍🏽", "x"}},
	}
	for _, tc := range tests {
		if got := tiles(qwenPattern{maxDigits: 1}, tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.in, got, tc.want)
		}
		checkTwins(t, tc.in)
	}
}

// alphabet mixes every class the patterns distinguish: letters (Latin, CJK, ſ, and U+2EBF0 of
// Unicode 15.1), numbers (Nd, Nl, No, and U+1E5F1 of Unicode 16.0), White_Space (ASCII, NEL, NBSP, U+2028, U+3000), CR/LF, apostrophes, symbols,
// marks, format characters and invalid UTF-8 bytes.
var alphabet = []string{"a", "Z", "s", "S", "t", "r", "e", "v", "m", "l", "L", "d", "ſ", "é", "日", "\U0002EBF0", "9", "٣", "Ⅻ", "½", "\U0001E5F1",
	" ", " ", " ", "\t", "\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u2028", "\u3000", "'", "'", "’", ".", "{", "-", "😀",
	"\u0301", "\u200b", "\x00", "\xff", "\xc3", "\xe2\x82"}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func TestPatternTwinsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkTwins(t, randomText(r, 1+r.IntN(24)))
	}
}

func FuzzPatternTwins(f *testing.F) {
	for _, s := range []string{"Hello, world!", "a  \n b", "it's 12", "\u00a0\u3000x", "\xff'S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkTwins(t, s) })
}

func TestTranslateRegex(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\s+`, `[` + spaceClass + `]+`},
		{`[^\s\d]`, `[^` + spaceClass + digitClass + `]`},
		{`\S\W\D`, `[^` + spaceClass + `][^` + wordClass + `][^` + digitClass + `]`},
		{`[]\w]`, `[\]` + wordClass + `]`},
		{`\\s\p{L}`, `\\s[` + letterClass + `]`},
		{`[^\r\n\p{L}\p{N}]?\pL+\PN\p{Lu}`, `[^\r\n` + letterClass + numberClass + `]?[` + letterClass + `]+[^` + numberClass + `]\p{Lu}`},
	}
	for _, tc := range tests {
		if got, err := translateRegex(tc.in); err != nil || got != tc.want {
			t.Errorf("translateRegex(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, p := range []string{`[^\S]`, `[x\P{L}]`} {
		if _, err := translateRegex(p); err == nil {
			t.Errorf(`%s: no error`, p)
		}
	}
	if !strings.Contains(letterClass, `\x{2EBF0}-\x{2EE5D}`) || !strings.Contains(digitClass, `\x{1E5F1}-\x{1E5FA}`) {
		t.Errorf("Unicode 16.0 ranges missing: %s / %s", letterClass, digitClass)
	}
	if _, err := newMatcher(`\s+(?!\S)`); err == nil || !strings.Contains(err.Error(), `\s+(?!\S)`) {
		t.Errorf("lookahead pattern: err = %v, want one naming the pattern", err)
	}
}

func TestSplitBehaviors(t *testing.T) {
	const text = "a--b-c--"
	tests := []struct {
		b      behavior
		invert bool
		want   string
	}{
		{isolated, false, "a|-|-|b|-|c|-|-"},
		{removed, false, "a|b|c"},
		{removed, true, "-|-|-|-|-"},
		{mergedWithPrevious, false, "a-|-|b-|c-|-"},
		{mergedWithNext, false, "a|-|-b|-c|-|-"},
		{contiguous, false, "a|--|b|-|c|--"},
		{contiguous, true, "a|--|b|-|c|--"},
	}
	for _, tc := range tests {
		st := &splitStep{m: literalMatcher{"-"}, behavior: tc.b, invert: tc.invert}
		var got []string
		st.split(text, func(p string) { got = append(got, p) })
		if strings.Join(got, "|") != tc.want {
			t.Errorf("behavior %d invert %v: got %q, want %q", tc.b, tc.invert, strings.Join(got, "|"), tc.want)
		}
	}
}
