package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

type split struct {
	text string
	id   int
}

func splitAdded(m *addedMatcher, s string) []split {
	var out []split
	for _, p := range m.split(nil, s) {
		out = append(out, split{s[p.start:p.end], p.id})
	}
	return out
}

// The cases of tokenizers' added_vocabulary.rs tests (their Lowercase normalizer is replaced
// by lowercase input).
func TestAddedTokenFlags(t *testing.T) {
	tok := func(id int, content string, f func(*addedToken)) *addedToken {
		a := &addedToken{ID: id, Content: content}
		if f != nil {
			f(a)
		}
		return a
	}
	matcher := func(tokens ...*addedToken) *addedMatcher {
		var contents []string
		for _, a := range tokens {
			contents = append(contents, a.Content)
		}
		return newAddedMatcher(tokens, contents)
	}
	single := func(a *addedToken) { a.SingleWord = true }
	strip := func(a *addedToken) { a.LStrip, a.RStrip = true, true }
	all := func(a *addedToken) { a.LStrip, a.RStrip, a.SingleWord = true, true, true }
	tests := []struct {
		name string
		m    *addedMatcher
		in   string
		want []split
	}{
		{"extract", matcher(tok(0, "my", nil), tok(1, "name", nil), tok(2, "[CLS]", nil), tok(3, "[SEP]", nil)),
			"[CLS] My name is Anthony [SEP]", []split{{"[CLS]", 2}, {" My ", -1}, {"name", 1}, {" is Anthony ", -1}, {"[SEP]", 3}}},
		{"options", matcher(tok(0, "my", strip), tok(1, "name", nil), tok(2, "ony", single), tok(3, "[CLS]", nil), tok(4, "[SEP]", nil)),
			"[CLS] my name is anthony [SEP]", []split{{"[CLS]", 3}, {" my ", 0}, {"name", 1}, {" is anthony ", -1}, {"[SEP]", 4}}},
		{"single word", matcher(tok(0, "<mask>", single)),
			"<mask> my name <mask> a<mask> <mask>ony <mask>", []split{{"<mask>", 0}, {" my name ", -1}, {"<mask>", 0}, {" a<mask> <mask>ony ", -1}, {"<mask>", 0}}},
		{"single word unicode", matcher(tok(0, "<mask>", single)),
			"<mask>, <mask>- ◌̰<mask>", []split{{"<mask>", 0}, {", ", -1}, {"<mask>", 0}, {"- ◌̰<mask>", -1}}},
		{"lstrip unicode space", matcher(tok(0, "<mask>", all)),
			"hi <mask> there\t<mask>\t<mask>\u2000", []split{{"hi", -1}, {" <mask> ", 0}, {"there", -1}, {"\t<mask>\t", 0}, {"<mask>\u2000", 0}}},
		{"longest first", matcher(tok(0, "<a>", nil), tok(1, "<a><b>", nil), tok(2, "<a><", nil)),
			"x<a><b><a><c", []split{{"x", -1}, {"<a><b>", 1}, {"<a><", 2}, {"c", -1}}},
		{"empty", matcher(tok(0, "<a>", nil)), "", nil},
	}
	for _, tc := range tests {
		if got := splitAdded(tc.m, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q\n got %+v\nwant %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestNormalizedAddedTokens: tokens with normalized=false match the raw text first; those with
// normalized=true match the NFC text of the remaining pieces, under their NFC content.
func TestNormalizedAddedTokens(t *testing.T) {
	tok, err := Parse(tinyJSON(t, map[string]any{
		"normalizer": obj(`{"type": "NFC"}`),
		"added_tokens": obj(`[
			{"id": 4105, "content": "cafe\u0301", "normalized": true, "special": false},
			{"id": 4106, "content": "e\u0301x", "normalized": false, "special": true},
			{"id": 4107, "content": "<sep>", "normalized": false, "special": true, "lstrip": true, "rstrip": true}]`),
	}))
	if err != nil {
		t.Fatal(err)
	}
	tiny := loadTiny(t)
	got := tok.Encode("cafe\u0301 e\u0301x  <sep>  café")
	want := slices.Concat([]int{4105}, tiny.Encode(" "), []int{4106, 4107, 4105})
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if s, _ := tok.Decode(got); s != "cafe\u0301 e\u0301x<sep>cafe\u0301" { // added tokens decode to their content
		t.Errorf("Decode = %q", s)
	}
	if !tok.IsSpecial(4107) || tok.IsSpecial(4105) {
		t.Error("IsSpecial wrong")
	}
}

func TestAddedTokensInText(t *testing.T) {
	tok := loadTiny(t)
	got := tok.Encode("a<|im_end|><think><|im_end|b")
	if !slices.Contains(got, 4098) || !slices.Contains(got, 4103) || strings.Count(mustDecode(t, tok, got), "<|im_end|") != 2 {
		t.Errorf("Encode = %v", got)
	}
}

func mustDecode(t *testing.T, tok *Tokenizer, ids []int) string {
	t.Helper()
	s, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
