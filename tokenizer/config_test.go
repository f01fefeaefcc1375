package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyJSON returns forge-tiny's tokenizer.json with the given top-level fields replaced.
func tinyJSON(t *testing.T, replace map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tinyDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range replace {
		if sub, ok := v.(map[string]any); ok && k == "model" {
			for mk, mv := range sub {
				doc["model"].(map[string]any)[mk] = mv
			}
			continue
		}
		doc[k] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func TestUnsupportedFeatures(t *testing.T) {
	tests := []struct {
		name    string
		replace map[string]any
		mention string
	}{
		{"normalizer", map[string]any{"normalizer": obj(`{"type": "Lowercase"}`)}, `"Lowercase"`},
		{"normalizer in sequence", map[string]any{"normalizer": obj(`{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip"}]}`)}, `"Strip"`},
		{"pre-tokenizer", map[string]any{"pre_tokenizer": obj(`{"type": "Sequence", "pretokenizers": [{"type": "Metaspace"}]}`)}, `"Metaspace"`},
		{"no ByteLevel", map[string]any{"pre_tokenizer": obj(`{"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"}`)}, "ByteLevel"},
		{"lookahead regex", map[string]any{"pre_tokenizer": obj(`{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "a(?=b)"}, "behavior": "Isolated"}, {"type": "ByteLevel"}]}`)}, "a(?=b)"},
		{"behavior", map[string]any{"pre_tokenizer": obj(`{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"String": "x"}, "behavior": "Sideways"}, {"type": "ByteLevel"}]}`)}, `"Sideways"`},
		{"model", map[string]any{"model": map[string]any{"type": "WordPiece"}}, `"WordPiece"`},
		{"dropout", map[string]any{"model": map[string]any{"dropout": 0.1}}, "dropout"},
		{"prefix", map[string]any{"model": map[string]any{"continuing_subword_prefix": "##"}}, "continuing_subword_prefix"},
		{"decoder", map[string]any{"decoder": obj(`{"type": "Metaspace"}`)}, `"Metaspace"`},
		{"no decoder", map[string]any{"decoder": nil}, "decoder"},
		{"post-processor", map[string]any{"post_processor": obj(`{"type": "TemplateProcessing"}`)}, `"TemplateProcessing"`},
		{"truncation", map[string]any{"truncation": obj(`{"max_length": 8}`)}, "truncation"},
		{"padding", map[string]any{"padding": obj(`{"strategy": "BatchLongest"}`)}, "padding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tinyJSON(t, tc.replace))
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v; want ErrUnsupported mentioning %s", err, tc.mention)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("missing tokenizer.json: err = %v", err)
	}
	bad := map[string][]byte{
		"bad merge":     tinyJSON(t, map[string]any{"model": map[string]any{"merges": []string{"Ġ Ġ", "zz yy"}}}),
		"merge no sep":  tinyJSON(t, map[string]any{"model": map[string]any{"merges": []string{"ĠĠ"}}}),
		"missing unk":   tinyJSON(t, map[string]any{"model": map[string]any{"unk_token": "<unk>"}}),
		"not json":      []byte(`{"model": `),
		"split pattern": tinyJSON(t, map[string]any{"pre_tokenizer": obj(`{"type": "Sequence", "pretokenizers": [{"type": "Split", "behavior": "Isolated"}, {"type": "ByteLevel"}]}`)}),
	}
	for name, data := range bad {
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSupportedVariants encodes with other supported settings: a generic regex Split, GPT-2's
// ByteLevel(use_regex) with a prefix space, NFKC, and merges written as pairs.
func TestSupportedVariants(t *testing.T) {
	tiny := loadTiny(t)
	plain := func(s string) []int { return tiny.Encode(s) }
	tests := []struct {
		name    string
		replace map[string]any
		text    string
		want    []int
	}{
		{"regex split", map[string]any{"pre_tokenizer": obj(`{"type": "Sequence", "pretokenizers": [
			{"type": "Split", "pattern": {"Regex": "\\s+|\\w+|[^\\s\\w]+"}, "behavior": "Isolated", "invert": false},
			{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}`)},
			"foo  bar", slices.Concat(plain("foo"), plain("  "), plain("bar"))},
		{"gpt2 bytelevel", map[string]any{"pre_tokenizer": obj(`{"type": "ByteLevel", "add_prefix_space": true}`)},
			"foo bar", slices.Concat(plain(" foo"), plain(" bar"))},
		{"nfkc", map[string]any{"normalizer": obj(`{"type": "NFKC"}`)}, "ﬁx²", plain("fix2")},
		{"pair merges", map[string]any{"model": map[string]any{"merges": pairMerges(t)}}, "func main() {}", plain("func main() {}")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Parse(tinyJSON(t, tc.replace))
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

// pairMerges returns forge-tiny's merges as [a, b] pairs.
func pairMerges(t *testing.T) [][2]string {
	var doc struct {
		Model struct{ Merges []string } `json:"model"`
	}
	if err := json.Unmarshal(tinyJSON(t, nil), &doc); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, m := range doc.Model.Merges {
		a, b, _ := strings.Cut(m, " ")
		out = append(out, [2]string{a, b})
	}
	return out
}

func TestVocabAccessors(t *testing.T) {
	tok := loadTiny(t)
	if tok.VocabSize() != 4105 {
		t.Errorf("VocabSize = %d, want 4105", tok.VocabSize())
	}
	for _, tc := range []struct {
		tok string
		id  int
	}{{"<|im_end|>", 4098}, {"</think>", 4104}, {"Ġ", 220}, {"!", 0}} {
		if id, ok := tok.TokenID(tc.tok); !ok || id != tc.id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", tc.tok, id, ok, tc.id)
		}
		if s, ok := tok.Token(tc.id); !ok || s != tc.tok {
			t.Errorf("Token(%d) = %q, %v; want %q", tc.id, s, ok, tc.tok)
		}
	}
	if _, ok := tok.Token(4105); ok {
		t.Error("Token(4105) exists")
	}
	if _, ok := tok.TokenID("no such token"); ok {
		t.Error("TokenID of a missing token")
	}
}
