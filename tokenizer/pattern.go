package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The Split patterns that Qwen2/Qwen3 (maxDigits 1), Llama 3 (maxDigits 3) and GPT-2 use.
// Their `\s+(?!\S)` lookahead is beyond Go's RE2, so they are matched by hand-written
// matchers that reproduce the backtracking engine's (Oniguruma's) leftmost-first choices.
const (
	qwenRegex   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	gpt2Regex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// tiling is a pattern that matches at every position of any text, so its matches tile the text:
// next returns the end (> i) of the match that starts at byte offset i < len(s).
type tiling interface {
	next(s string, i int) int
}

// Character classes of ASCII bytes: \p{L}, \p{N}, \s (Unicode White_Space, which is also
// Oniguruma's and Rust regex's \s), and the CR/LF subset of \s.
const (
	clLetter uint8 = 1 << iota
	clNumber
	clSpace
	clNewline
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = clLetter
		case '0' <= c && c <= '9':
			t[c] = clNumber
		case c == '\r' || c == '\n':
			t[c] = clSpace | clNewline
		case c == ' ' || ('\t' <= c && c <= '\f'):
			t[c] = clSpace
		}
	}
	return t
}()

// classAt returns the class bits and the width of the rune at s[i], with \p{L} and \p{N} as in
// Unicode 16.0 like the Oniguruma of tokenizers (unicode16.go). An invalid UTF-8 byte is a
// one-byte rune of no class (U+FFFD, a symbol, would have none either).
func classAt(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clLetter, w
	case unicode.IsNumber(r):
		return clNumber, w
	case unicode.IsSpace(r):
		return clSpace, w
	case isLetter16(r): // Oniguruma's tables are Unicode 16.0's, Go's 15.0's
		return clLetter, w
	case isNumber16(r):
		return clNumber, w
	}
	return 0, w
}

// run returns the end of the run of runes from i whose class intersects want.
func run(s string, i int, want uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClass[c]&want == 0 {
				return i
			}
			i++
			continue
		}
		cl, w := classAt(s, i)
		if cl&want == 0 {
			return i
		}
		i += w
	}
	return i
}

// otherRun returns the end of the run from i of runes that are neither \s, \p{L} nor \p{N}.
func otherRun(s string, i int) int {
	for i < len(s) {
		cl, w := classAt(s, i)
		if cl != 0 {
			return i
		}
		i += w
	}
	return i
}

// contraction returns the length of the contraction suffix (after the apostrophe) at s[j], or 0.
// With ignoreCase, as in (?i:...), U+017F LATIN SMALL LETTER LONG S folds to 's' as well.
func contraction(s string, j int, ignoreCase bool) int {
	if j >= len(s) {
		return 0
	}
	c := s[j]
	if ignoreCase {
		if c == 0xC5 && j+1 < len(s) && s[j+1] == 0xBF { // ſ
			return 2
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
	}
	second := func(want byte) int {
		if j+1 < len(s) {
			d := s[j+1]
			if ignoreCase && 'A' <= d && d <= 'Z' {
				d += 'a' - 'A'
			}
			if d == want {
				return 2
			}
		}
		return 0
	}
	switch c {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		return second('e')
	case 'l':
		return second('l')
	}
	return 0
}

// spaceTail matches the whitespace alternatives at i, where s[i] is whitespace:
// with newlines, `\s*[\r\n]+` (through the last CR/LF of the whitespace run); then
// `\s+(?!\S)` (the whole run at the end of s, else the run less its last rune when that
// leaves at least one); then `\s+`.
func spaceTail(s string, i int, newlines bool) int {
	last, lastNL, j := i, -1, i
	for j < len(s) {
		cl, w := classAt(s, j)
		if cl&clSpace == 0 {
			break
		}
		if cl&clNewline != 0 {
			lastNL = j + w
		}
		last = j
		j += w
	}
	switch {
	case newlines && lastNL > 0:
		return lastNL
	case j == len(s):
		return j
	case last > i:
		return last
	}
	return j
}

// qwenPattern matches qwenRegex (maxDigits 1) or llama3Regex (maxDigits 3).
type qwenPattern struct{ maxDigits int }

func (p qwenPattern) next(s string, i int) int {
	c := s[i]
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' {
		if n := contraction(s, i+1, true); n > 0 {
			return i + 1 + n
		}
	}
	cl, w := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if cl&clLetter != 0 {
		return run(s, i+w, clLetter)
	}
	if cl&(clNewline|clNumber) == 0 && i+w < len(s) {
		if cl2, w2 := classAt(s, i+w); cl2&clLetter != 0 {
			return run(s, i+w+w2, clLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if cl&clNumber != 0 {
		j := i + w
		for k := 1; k < p.maxDigits && j < len(s); k++ {
			cl2, w2 := classAt(s, j)
			if cl2&clNumber == 0 {
				break
			}
			j += w2
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := i
	if c == ' ' {
		j++
	}
	if k := otherRun(s, j); k > j {
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}
	// s[i] is whitespace: `\s*[\r\n]+|\s+(?!\S)|\s+`
	return spaceTail(s, i, true)
}

// gpt2Pattern matches gpt2Regex.
type gpt2Pattern struct{}

func (gpt2Pattern) next(s string, i int) int {
	c := s[i]
	if c == '\'' {
		if n := contraction(s, i+1, false); n > 0 {
			return i + 1 + n
		}
	}
	j := i
	if c == ' ' && i+1 < len(s) {
		j++
	}
	// ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
	cl, w := classAt(s, j)
	switch {
	case cl&clLetter != 0:
		return run(s, j+w, clLetter)
	case cl&clNumber != 0:
		return run(s, j+w, clNumber)
	case cl == 0:
		return otherRun(s, j+w)
	}
	// `\s+(?!\S)|\s+`
	return spaceTail(s, i, false)
}
