package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's "added_tokens".
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text the way tokenizers' AddedVocabulary::find_matches
// does: leftmost-longest matches of the token contents (an Aho-Corasick automaton there, a
// byte trie here), then the single_word, lstrip and rstrip rules.
type addedMatcher struct {
	first  [256]bool
	nodes  []trieNode
	tokens []*addedToken
}

type trieNode struct {
	edges []trieEdge
	token int32 // index into tokens of the content ending here, or -1
}

type trieEdge struct {
	b    byte
	node int32
}

// newAddedMatcher builds a matcher for the tokens, each under pattern content[i].
func newAddedMatcher(tokens []*addedToken, contents []string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{token: -1}}, tokens: tokens}
	for i, c := range contents {
		if c == "" {
			continue
		}
		m.first[c[0]] = true
		n := int32(0)
		for k := 0; k < len(c); k++ {
			child := m.child(n, c[k])
			if child < 0 {
				child = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{token: -1})
				m.nodes[n].edges = append(m.nodes[n].edges, trieEdge{c[k], child})
			}
			n = child
		}
		m.nodes[n].token = int32(i)
	}
	return m
}

func (m *addedMatcher) child(n int32, b byte) int32 {
	for _, e := range m.nodes[n].edges {
		if e.b == b {
			return e.node
		}
	}
	return -1
}

// longest returns the index and length of the longest token content that starts at s[i].
func (m *addedMatcher) longest(s string, i int) (tok int32, n int) {
	tok, node := -1, int32(0)
	for k := i; k < len(s); k++ {
		if node = m.child(node, s[k]); node < 0 {
			break
		}
		if t := m.nodes[node].token; t >= 0 {
			tok, n = t, k+1-i
		}
	}
	return tok, n
}

// piece is a span of text that is either an added token (id >= 0) or ordinary text (id < 0).
type piece struct {
	start, end int
	id         int
}

// split appends the pieces of s: added tokens and the text between them, covering s.
func (m *addedMatcher) split(dst []piece, s string) []piece {
	m.each(s, func(p piece) bool { dst = append(dst, p); return true })
	return dst
}

// each calls yield with the pieces of s in order, added tokens and the text between them,
// covering s, until yield returns false.
func (m *addedMatcher) each(s string, yield func(piece) bool) {
	startOffset := 0
	for pos := 0; pos < len(s); {
		// Leftmost-longest: the first position where some content starts, its longest content.
		start, tok, n := -1, int32(-1), 0
		for i := pos; i < len(s); i++ {
			if m.first[s[i]] {
				if tok, n = m.longest(s, i); tok >= 0 {
					start = i
					break
				}
			}
		}
		if start < 0 {
			break
		}
		stop := start + n
		pos = stop
		t := m.tokens[tok]
		if t.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if t.LStrip {
			start = startOffset + trailingSpaceStart(s[startOffset:start]) // not past the previous piece
		}
		if t.RStrip {
			stop += leadingSpaceEnd(s[stop:])
		}
		if startOffset < start && !yield(piece{startOffset, start, -1}) {
			return
		}
		if !yield(piece{start, stop, t.ID}) {
			return
		}
		startOffset = stop
	}
	if startOffset != len(s) {
		yield(piece{startOffset, len(s), -1})
	}
}

// isWordRune is Rust regex's Unicode \w: Alphabetic, marks, decimal digits, connector
// punctuation and Join_Control.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) ||
		unicode.In(r, unicode.Nl, unicode.Nd, unicode.Pc, unicode.Other_Alphabetic, unicode.Join_Control)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}

// trailingSpaceStart returns where the trailing run of White_Space runes of s starts.
func trailingSpaceStart(s string) int {
	for len(s) > 0 {
		r, w := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-w]
	}
	return len(s)
}

// leadingSpaceEnd returns where the leading run of White_Space runes of s ends.
func leadingSpaceEnd(s string) int {
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += w
	}
	return i
}
