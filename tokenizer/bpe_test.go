package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

// newModel builds a BPE model from a vocabulary and "a b" merges (tokens in the byte alphabet;
// ASCII letters stand for themselves).
func newModel(t *testing.T, vocab map[string]int32, merges []string, opts modelJSON) *bpe {
	t.Helper()
	raw, err := json.Marshal(merges)
	if err != nil {
		t.Fatal(err)
	}
	opts.Type, opts.Vocab, opts.Merges = "BPE", vocab, raw
	m, err := parseModel(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func words(m *bpe, w string) []int {
	var ids []int
	for _, id := range m.word(nil, w) {
		ids = append(ids, int(id))
	}
	return ids
}

// The cases of tokenizers' models/bpe/model.rs tests.
func TestBPEModel(t *testing.T) {
	unrelated := newModel(t, map[string]int32{"u": 0, "n": 1, "r": 2, "e": 3, "l": 4, "a": 5, "t": 6, "d": 7,
		"re": 8, "at": 9, "ed": 10, "un": 11, "ated": 12, "rel": 13, "related": 14, "unrelated": 15},
		[]string{"r e", "a t", "e d", "u n", "at ed", "re l", "rel ated", "un related"}, modelJSON{})
	unk := "<unk>"
	unkVocab := map[string]int32{"<unk>": 0, "a": 1, "b": 2}
	notFused := newModel(t, unkVocab, nil, modelJSON{UnkToken: &unk})
	fused := newModel(t, unkVocab, nil, modelJSON{UnkToken: &unk, FuseUnk: true})
	fallback := newModel(t, map[string]int32{"<unk>": 0, "<0x61>": 1}, nil, modelJSON{UnkToken: &unk, ByteFallback: true})
	abcVocab := map[string]int32{"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
	merging := newModel(t, abcVocab, []string{"a b"}, modelJSON{})
	ignoring := newModel(t, abcVocab, []string{"a b"}, modelJSON{IgnoreMerges: true})
	tests := []struct {
		name string
		m    *bpe
		word string
		want []int
	}{
		{"merges", unrelated, "unrelated", []int{15}},
		{"unk", notFused, "c", []int{0}},
		{"unk twice", notFused, "cc", []int{0, 0}},
		{"unk inside", notFused, "accb", []int{1, 0, 0, 2}},
		{"fused unk", fused, "cc", []int{0}},
		{"fused unk inside", fused, "accb", []int{1, 0, 2}},
		{"byte fallback to unk", fallback, "c", []int{0}},
		{"byte fallback", fallback, "a", []int{1}},
		{"no ignore_merges", merging, "abc", []int{3, 2}},
		{"ignore_merges", ignoring, "abc", []int{4}},
		{"ignore_merges miss", ignoring, "abab", []int{3, 3}},
	}
	for _, tc := range tests {
		if got := words(tc.m, tc.word); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q → %v, want %v", tc.name, tc.word, got, tc.want)
		}
	}
}

// TestMergeTwins checks the heap merge against the scan merge (its reference twin) on random
// words, short and long, for every tokenizer at hand.
func TestMergeTwins(t *testing.T) {
	toks := []*Tokenizer{loadTiny(t)}
	if findQwen3Dir() != "" {
		toks = append(toks, loadQwen3(t))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tok := range toks {
		m := tok.model
		for range 3000 {
			word := []byte(randomText(r, 1+r.IntN(40)))
			if r.IntN(4) == 0 { // runs of one byte stress equal-rank merges
				word = []byte(string(rune('a'+r.IntN(3))) + string(make([]byte, r.IntN(20))))
			}
			syms := m.symbols(nil, string(word))
			scan := m.mergeScan(slices.Clone(syms))
			heap := m.mergeHeap(slices.Clone(syms))
			if !slices.Equal(scan, heap) {
				t.Fatalf("%q: scan %v, heap %v", word, scan, heap)
			}
		}
	}
}

func TestLongWords(t *testing.T) {
	tok := loadTiny(t)
	for _, s := range []string{string(make([]byte, 5000)), "                                                                                                    x",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		got, err := tok.Decode(tok.Encode(s))
		if err != nil || got != s {
			t.Errorf("round trip of %d bytes failed: %v", len(s), err)
		}
	}
}
