package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// step is one pre-tokenizer of a Sequence: it cuts a piece of text into smaller pieces
// (in order, together covering the text unless the step removes delimiters).
type step interface {
	split(s string, emit func(piece string))
}

// matcher finds the successive non-overlapping, non-empty matches of a Split pattern.
type matcher interface {
	each(s string, yield func(start, end int))
}

// tilingMatcher adapts a hand-written pattern.
type tilingMatcher struct{ t tiling }

func (m tilingMatcher) each(s string, yield func(start, end int)) {
	for i := 0; i < len(s); {
		j := m.t.next(s, i)
		yield(i, j)
		i = j
	}
}

// regexpMatcher is the general fallback: a Split regex translated to Go's RE2 syntax.
type regexpMatcher struct{ re *regexp.Regexp }

func (m regexpMatcher) each(s string, yield func(start, end int)) {
	for _, loc := range m.re.FindAllStringIndex(s, -1) {
		if loc[1] > loc[0] { // empty matches produce no tokens
			yield(loc[0], loc[1])
		}
	}
}

// literalMatcher is a Split pattern given as {"String": ...}.
type literalMatcher struct{ lit string }

func (m literalMatcher) each(s string, yield func(start, end int)) {
	if m.lit == "" {
		return
	}
	for off := 0; ; {
		k := strings.Index(s[off:], m.lit)
		if k < 0 {
			return
		}
		yield(off+k, off+k+len(m.lit))
		off += k + len(m.lit)
	}
}

// behavior is a Split pre-tokenizer's SplitDelimiterBehavior.
type behavior int

const (
	isolated behavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var behaviors = map[string]behavior{
	"Isolated":           isolated,
	"Removed":            removed,
	"MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext":     mergedWithNext,
	"Contiguous":         contiguous,
}

// splitStep is the Split pre-tokenizer.
type splitStep struct {
	m        matcher
	behavior behavior
	invert   bool
}

type segment struct {
	start, end int
	match      bool
}

// split follows tokenizers' NormalizedString::split: the text is cut into matches and the gaps
// between them, then matches are isolated, removed or merged into their neighbours.
func (st *splitStep) split(s string, emit func(string)) {
	if st.behavior == isolated {
		prev := 0
		st.m.each(s, func(start, end int) {
			if start > prev {
				emit(s[prev:start])
			}
			emit(s[start:end])
			prev = end
		})
		if prev < len(s) {
			emit(s[prev:])
		}
		return
	}
	var segs []segment
	prev := 0
	st.m.each(s, func(start, end int) {
		if start > prev {
			segs = append(segs, segment{prev, start, st.invert})
		}
		segs = append(segs, segment{start, end, !st.invert})
		prev = end
	})
	if prev < len(s) {
		segs = append(segs, segment{prev, len(s), st.invert})
	}
	for _, g := range mergeSegments(segs, st.behavior) {
		if !(st.behavior == removed && g.match) {
			emit(s[g.start:g.end])
		}
	}
}

// mergeSegments applies the Contiguous and MergedWith* folds (others pass through).
func mergeSegments(segs []segment, b behavior) []segment {
	var out []segment
	prevMatch := false
	switch b {
	case contiguous, mergedWithPrevious:
		for _, g := range segs {
			merge := g.match == prevMatch
			if b == mergedWithPrevious {
				merge = g.match && !prevMatch
			}
			if merge && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, segment{g.start, g.end, false})
			}
			prevMatch = g.match
		}
		return out
	case mergedWithNext:
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = g.start
			} else {
				out = append(out, segment{g.start, g.end, false})
			}
			prevMatch = g.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	return segs
}

// byteLevelStep is the ByteLevel pre-tokenizer. The byte-to-alphabet mapping itself is done
// by the BPE model (it works on raw bytes); this step adds the prefix space and the GPT-2 split.
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b byteLevelStep) split(s string, emit func(string)) {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.useRegex {
		emit(s)
		return
	}
	tilingMatcher{gpt2Pattern{}}.each(s, func(start, end int) { emit(s[start:end]) })
}

// newMatcher picks the hand-written matcher for the known Qwen/Llama 3/GPT-2 patterns and
// Go's regexp for anything else, after translating Oniguruma's Unicode-aware \s, \d and \w.
func newMatcher(pattern string) (matcher, error) {
	switch pattern {
	case qwenRegex:
		return tilingMatcher{qwenPattern{maxDigits: 1}}, nil
	case llama3Regex:
		return tilingMatcher{qwenPattern{maxDigits: 3}}, nil
	case gpt2Regex:
		return tilingMatcher{gpt2Pattern{}}, nil
	}
	expr, err := translateRegex(pattern)
	if err == nil {
		var re *regexp.Regexp
		if re, err = regexp.Compile(expr); err == nil {
			return regexpMatcher{re}, nil
		}
	}
	return nil, fmt.Errorf("split pattern %#q is not supported (Go regexp: %v): %w", pattern, err, ErrUnsupported)
}

// Oniguruma's Unicode \s (White_Space: the ASCII controls, U+0085 and the Z categories),
// \d (Nd), \w (letters, marks, Nd, Pc), \p{L} and \p{N} in RE2 class syntax, without the
// brackets; letters and digits include those of Unicode 15.1 and 16.0 that Go's tables lack.
var (
	spaceClass  = `\t\n\v\f\r \x{85}\p{Z}`
	letterClass = `\p{L}` + rangeClass(letters16)
	numberClass = `\p{N}` + rangeClass(numbers16)
	digitClass  = `\p{Nd}` + rangeClass(numbers16)
	wordClass   = `\p{L}\p{M}\p{Nd}\p{Pc}` + rangeClass(letters16) + rangeClass(numbers16)
)

// rangeClass writes the ranges of t (stride 1) as RE2 class items.
func rangeClass(t *unicode.RangeTable) string {
	var b strings.Builder
	item := func(lo, hi uint32) {
		fmt.Fprintf(&b, `\x{%X}`, lo)
		if hi > lo {
			fmt.Fprintf(&b, `-\x{%X}`, hi)
		}
	}
	for _, r := range t.R16 {
		item(uint32(r.Lo), uint32(r.Hi))
	}
	for _, r := range t.R32 {
		item(r.Lo, r.Hi)
	}
	return b.String()
}

// translateRegex rewrites \s \S \d \D \w \W of an Oniguruma pattern into explicit Unicode
// classes, since Go's are ASCII-only, and \p{L} \p{N} (\pL \pN, and the \P negations) into
// Unicode 16.0's. Negated classes inside a bracket class cannot be expressed in RE2 and are
// refused.
func translateRegex(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			class, negated, name := "", false, p[i:i+1]
			switch p[i] {
			case 's', 'S':
				class, negated = spaceClass, p[i] == 'S'
			case 'd', 'D':
				class, negated = digitClass, p[i] == 'D'
			case 'w', 'W':
				class, negated = wordClass, p[i] == 'W'
			case 'p', 'P':
				prop := ""
				for _, form := range []string{"{L}", "L", "{N}", "N"} {
					if strings.HasPrefix(p[i+1:], form) {
						prop = form
						break
					}
				}
				if prop == "" {
					b.WriteByte('\\')
					b.WriteByte(p[i])
					continue
				}
				class, negated, name = letterClass, p[i] == 'P', p[i:i+1+len(prop)]
				if strings.Contains(prop, "N") {
					class = numberClass
				}
				i += len(prop)
			default:
				b.WriteByte('\\')
				b.WriteByte(p[i])
				continue
			}
			switch {
			case inClass && negated:
				return "", fmt.Errorf(`\%s inside a bracket class`, name)
			case inClass:
				b.WriteString(class)
			case negated:
				b.WriteString("[^" + class + "]")
			default:
				b.WriteString("[" + class + "]")
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal.
			if i+1 < len(p) && p[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
				b.WriteString(`\]`)
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
