package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var tinyDir = filepath.Join("..", "testdata", "tokenizer", "forge-tiny")

// findQwen3Dir finds the real Qwen3 tokenizer (11 MB, kept out of git): $FORGE_QWEN3_TOKENIZER,
// else the shared fixtures next to the repository; "" when neither holds a tokenizer.json.
func findQwen3Dir() string {
	for _, dir := range []string{os.Getenv("FORGE_QWEN3_TOKENIZER"), filepath.Join("..", "..", "shared", "fixtures", "qwen3-tokenizer")} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
			return dir
		}
	}
	return ""
}

// qwen3Dir returns findQwen3Dir or skips the test.
func qwen3Dir(tb testing.TB) string {
	tb.Helper()
	dir := findQwen3Dir()
	if dir == "" {
		tb.Skip("Qwen3 tokenizer not found: set FORGE_QWEN3_TOKENIZER to a directory holding its tokenizer.json (shared/fixtures/qwen3-tokenizer)")
	}
	return dir
}

type loaded struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

var tinyTok, qwen3Tok loaded

func load(tb testing.TB, l *loaded, dir string) *Tokenizer {
	tb.Helper()
	l.once.Do(func() { l.tok, l.err = Load(dir) })
	if l.err != nil {
		tb.Fatal(l.err)
	}
	return l.tok
}

func loadTiny(tb testing.TB) *Tokenizer  { return load(tb, &tinyTok, tinyDir) }
func loadQwen3(tb testing.TB) *Tokenizer { return load(tb, &qwen3Tok, qwen3Dir(tb)) }

// readJSONL decodes every line of a JSON-lines file into a T.
func readJSONL[T any](tb testing.TB, path string) []T {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

type encodeCase struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

// checkEncodeGolden checks ids and the round trip of every case and reports the pass count.
func checkEncodeGolden(t *testing.T, tok *Tokenizer, path string) {
	cases := readJSONL[encodeCase](t, path)
	pass := 0
	for i, c := range cases {
		got := tok.Encode(c.Text)
		ok := slices.Equal(got, c.IDs)
		if !ok {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, c.Text, got, c.IDs)
		}
		text, err := tok.Decode(c.IDs)
		if err != nil || text != c.Text {
			// NFC tokenizers decode to the normalized text.
			if want := normalized(tok, c.Text); err != nil || text != want {
				t.Errorf("case %d: Decode = %q, %v; want %q", i, text, err, want)
				ok = false
			}
		}
		if ok {
			pass++
		}
	}
	t.Logf("%s: %d/%d cases pass", path, pass, len(cases))
}

// normalized is what Decode(Encode(s)) gives for valid UTF-8: s with the text between the
// added tokens matched in the raw text normalized (each piece on its own, as Encode does).
func normalized(tok *Tokenizer, s string) string {
	if tok.normalizer == nil {
		return s
	}
	if tok.raw == nil {
		return tok.normalizer.normalize(s)
	}
	var b strings.Builder
	for _, p := range tok.raw.split(nil, s) {
		if p.id >= 0 {
			b.WriteString(s[p.start:p.end])
		} else {
			b.WriteString(tok.normalizer.normalize(s[p.start:p.end]))
		}
	}
	return b.String()
}

func TestGoldenTinyEncode(t *testing.T) {
	checkEncodeGolden(t, loadTiny(t), filepath.Join("..", "testdata", "tokenizer", "forge-tiny", "golden-encode.jsonl"))
}

func TestGoldenQwen3Encode(t *testing.T) {
	checkEncodeGolden(t, loadQwen3(t), filepath.Join("..", "testdata", "tokenizer", "qwen3", "golden-encode.jsonl"))
}

// The crosscheck goldens: 300 diverse strings per tokenizer (random Unicode from every plane,
// whitespace and contraction runs, added tokens next to spaces and marks, corpus slices, long
// runs of combining marks) with the ids of Hugging Face tokenizers 0.23.2 (see
// testdata/tokenizer/README.md). "js_ids", where present, are the differing ids of the pure-JS
// @huggingface/tokenizers 0.2.0, whose NFC has newer Unicode data than tokenizers'.
func TestCrosscheckTinyEncode(t *testing.T) {
	checkEncodeGolden(t, loadTiny(t), filepath.Join("..", "testdata", "tokenizer", "crosscheck-forge-tiny.jsonl"))
}

func TestCrosscheckQwen3Encode(t *testing.T) {
	checkEncodeGolden(t, loadQwen3(t), filepath.Join("..", "testdata", "tokenizer", "crosscheck-qwen3.jsonl"))
}

type chatCase struct {
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              json.RawMessage `json:"kwargs"`
	Rendered            string          `json:"rendered"`
	IDs                 []int           `json:"ids"`
}

func TestGoldenQwen3Chat(t *testing.T) {
	tok := loadQwen3(t)
	cases := readJSONL[chatCase](t, filepath.Join("..", "testdata", "tokenizer", "qwen3", "golden-chat.jsonl"))
	pass := 0
	for i, c := range cases {
		got, err := tok.Chat(c.Messages, ChatOptions{Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt, Kwargs: c.Kwargs})
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		ok := got == c.Rendered
		if !ok {
			t.Errorf("case %d rendered:\n got %q\nwant %q", i, got, c.Rendered)
		}
		if ids := tok.Encode(got); c.IDs != nil && !slices.Equal(ids, c.IDs) {
			t.Errorf("case %d ids:\n got %v\nwant %v", i, ids, c.IDs)
			ok = false
		}
		if ok {
			pass++
		}
	}
	t.Logf("%d/%d chat cases pass", pass, len(cases))
}
