package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"forge/tokenizer"
)

var (
	tinyOnce sync.Once
	tinyTok  *tokenizer.Tokenizer
	tinyErr  error
)

// tiny returns the tokenizer of models/forge-tiny, loaded once.
func tiny(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	tinyOnce.Do(func() { tinyTok, tinyErr = tokenizer.Load(filepath.Join("..", "models", "forge-tiny")) })
	if tinyErr != nil {
		tb.Fatal(tinyErr)
	}
	return tinyTok
}

// load is Load of one spec that must succeed.
func load(t *testing.T, sp Spec, opt Options) *Set {
	t.Helper()
	s, err := Load([]Spec{sp}, tiny(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decodeRows decodes the concatenation of rows, dropping a U+FFFD left by a character cut
// at the end of the last row.
func decodeRows(t *testing.T, tok *tokenizer.Tokenizer, rows [][]int) string {
	t.Helper()
	text, err := tok.Decode(slices.Concat(rows...))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(text, "\uFFFD")
}

// checkSeq fails unless every row has exactly seq tokens.
func checkSeq(t *testing.T, rows [][]int, seq int) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	for i, r := range rows {
		if len(r) != seq {
			t.Fatalf("row %d has %d tokens, want %d", i, len(r), seq)
		}
	}
}

// checkStream checks that rows are the consecutive rows of seq tokens of pieces, each encoded
// and joined with the separator: as many rows as the stream fills, decoding to its beginning.
func checkStream(t *testing.T, tok *tokenizer.Tokenizer, rows [][]int, seq int, pieces []string) {
	t.Helper()
	checkSeq(t, rows, seq)
	total := len(pieces) - 1 // separators
	for _, p := range pieces {
		total += len(tok.Encode(p))
	}
	if len(rows) != total/seq {
		t.Errorf("seq %d: %d rows, want %d of %d tokens", seq, len(rows), total/seq, total)
	}
	want := strings.Join(pieces, Separator)
	if got := decodeRows(t, tok, rows); !strings.HasPrefix(want, got) {
		t.Errorf("seq %d: rows decode to %q..., not the beginning of the input", seq, got[:min(len(got), 200)])
	}
}

func TestTextRows(t *testing.T) {
	tok := tiny(t)
	data, err := os.ReadFile("testdata/docs.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The documents as the file format defines them: the line end before a separator line
	// belongs to the document before it.
	docs := strings.Split(string(data), "\n"+Separator+"\n")
	for i := range docs[:len(docs)-1] {
		docs[i] += "\n"
	}
	for _, seq := range []int{1, 7, 64, 500} {
		s := load(t, Spec{Path: "testdata/docs.txt"}, Options{Seq: seq})
		checkStream(t, tok, s.Rows, seq, docs)
		src := s.Sources[0]
		if src.Kind != Text || src.Rows != len(s.Rows) || src.Available != len(s.Rows) || src.Tokens != len(s.Rows)*seq {
			t.Errorf("seq %d: source %+v", seq, src)
		}
	}
}

func TestTextDefaultSeq(t *testing.T) {
	// Repeat the test documents until they hold more than two default rows.
	data, err := os.ReadFile("testdata/docs.txt")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.txt")
	long := bytes.Repeat(append(data, []byte(Separator+"\n")...), 2*DefaultSeq/len(tiny(t).Encode(string(data)))+1)
	if err := os.WriteFile(path, long, 0o644); err != nil {
		t.Fatal(err)
	}
	s := load(t, Spec{Path: path}, Options{})
	checkSeq(t, s.Rows, DefaultSeq)
}

func TestTextDocuments(t *testing.T) {
	tok := tiny(t)
	sep, _ := tok.TokenID(Separator)
	tests := []struct {
		name, file string
		docs       []string
	}{
		{"plain", "a b\nc\n" + Separator + "\nd\n", []string{"a b\nc\n", "d\n"}},
		{"no final newline", "a\n" + Separator + "\nd", []string{"a\n", "d"}},
		{"leading separator", Separator + "\na\n", []string{"a\n"}},
		{"trailing separator", "a\n" + Separator + "\n", []string{"a\n"}},
		{"separator at end of file", "a\n" + Separator, []string{"a\n"}},
		{"two separators", "a\n" + Separator + "\n" + Separator + "\nb\n", []string{"a\n", "b\n"}},
		{"crlf", "a\r\n" + Separator + "\r\nb\r\n", []string{"a\r\n", "b\r\n"}},
		{"not a separator line", "a " + Separator + "\n" + Separator + "x\nb\n", []string{"a " + Separator + "\n" + Separator + "x\nb\n"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []int
			for i, d := range tc.docs {
				if i > 0 {
					want = append(want, sep)
				}
				want = append(want, tok.Encode(d)...)
			}
			if got := textStream([]byte(tc.file), tok, sep); !slices.Equal(got, want) {
				t.Errorf("stream %v, want %v", got, want)
			}
		})
	}
}

// conversations returns the chat template renderings of the lines of a .jsonl file.
func conversations(t *testing.T, tok *tokenizer.Tokenizer, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		var c struct{ Messages, Tools json.RawMessage }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		text, err := tok.Chat(c.Messages, tokenizer.ChatOptions{Tools: c.Tools, ParseArguments: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, text)
	}
	return out
}

func TestChatRows(t *testing.T) {
	tok := tiny(t)
	const seq = 48
	s := load(t, Spec{Path: "testdata/chat.jsonl"}, Options{Seq: seq})
	convs := conversations(t, tok, "testdata/chat.jsonl")
	checkStream(t, tok, s.Rows, seq, convs)
	want := strings.Join(convs, Separator)
	// The rendering's markers are single special tokens, not their spelled-out text.
	flat := slices.Concat(s.Rows...)
	for _, marker := range []string{"<|im_start|>", "<|im_end|>", "<tool_call>", "<tool_response>", Separator} {
		id, ok := tok.TokenID(marker)
		if !ok {
			t.Fatalf("no token %s", marker)
		}
		if strings.Contains(want, marker) && !slices.Contains(flat, id) {
			t.Errorf("rows hold no %s token (id %d)", marker, id)
		}
	}
	imStart, _ := tok.TokenID("<|im_start|>")
	if flat[0] != imStart {
		t.Errorf("first token %d, want <|im_start|> %d", flat[0], imStart)
	}
	// A tool call's JSON-string arguments are rendered as an object.
	if !strings.Contains(want, `"arguments": {"path": `) {
		t.Errorf("tool-call arguments not rendered as an object:\n%s", want)
	}
	if src := s.Sources[0]; src.Kind != Chat || src.Rows != len(s.Rows) {
		t.Errorf("source %+v", src)
	}
}

func TestChatMalformed(t *testing.T) {
	good, err := os.ReadFile("testdata/chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(good), "\n")
	tests := []struct{ name, line string }{
		{"not json", `{"messages": [`},
		{"not an object", `[1, 2]`},
		{"no messages", `{"tools": []}`},
		{"null messages", `{"messages": null}`},
		{"messages not a list", `{"messages": "hi"}`},
		{"empty messages", `{"messages": []}`},
		{"message not an object", `{"messages": [1]}`},
		{"message without role", `{"messages": [{"content": "hi"}]}`},
		{"tools not a list", `{"messages": [{"role": "user", "content": "hi"}], "tools": {"a": 1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Two good lines and a blank one, so the bad line is line 4.
			path := filepath.Join(t.TempDir(), "bad.jsonl")
			if err := os.WriteFile(path, []byte(first+"\n"+first+"\n\n"+tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load([]Spec{{Path: path}}, tiny(t), Options{Seq: 8})
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path+": line 4:") {
				t.Fatalf("error %v, want ErrFormat naming %s line 4", err, path)
			}
		})
	}
}

func TestSampling(t *testing.T) {
	const seq = 16
	all := load(t, Spec{Path: "testdata/docs.txt"}, Options{Seq: seq}).Rows
	k := len(all) / 3
	pick := func(seed uint64) *Set {
		return load(t, Spec{Path: "testdata/docs.txt", Rows: k}, Options{Seq: seq, Seed: seed})
	}
	a, b, c := pick(1), pick(1), pick(2)
	if !slices.EqualFunc(a.Rows, b.Rows, slices.Equal) {
		t.Error("the same seed sampled different rows")
	}
	if slices.EqualFunc(a.Rows, c.Rows, slices.Equal) {
		t.Error("seeds 1 and 2 sampled the same rows")
	}
	if a.Fingerprint() != b.Fingerprint() || a.Fingerprint() == c.Fingerprint() {
		t.Error("fingerprints do not follow the rows")
	}
	// The sampled rows are rows of the file, in file order.
	want := Sample(len(all), k, 1, 0)
	if len(a.Rows) != k {
		t.Fatalf("%d rows, want %d", len(a.Rows), k)
	}
	for i, r := range a.Rows {
		if !slices.Equal(r, all[want[i]]) {
			t.Fatalf("row %d is not file row %d", i, want[i])
		}
	}
	if src := a.Sources[0]; src.Rows != k || src.Available != len(all) || src.Tokens != k*seq {
		t.Errorf("source %+v", src)
	}
	// Asking for every row takes them all, in order.
	if s := load(t, Spec{Path: "testdata/docs.txt", Rows: len(all)}, Options{Seq: seq, Seed: 5}); !slices.EqualFunc(s.Rows, all, slices.Equal) {
		t.Error("Rows = available did not take every row in order")
	}
	// The same file twice draws independently (the spec's index is part of the seed).
	two, err := Load([]Spec{{Path: "testdata/docs.txt", Rows: k}, {Path: "testdata/docs.txt", Rows: k}}, tiny(t), Options{Seq: seq, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(two.Rows[:k], a.Rows, slices.Equal) || slices.EqualFunc(two.Rows[:k], two.Rows[k:], slices.Equal) {
		t.Error("a second spec of the same file should draw other rows")
	}
}

func TestSampleUniform(t *testing.T) {
	// Each of n indices should be drawn k/n of the time: over 4000 seeds the count of an index
	// is Binomial(4000, 0.3), standard deviation 29; 5 deviations allow 145.
	const n, k, seeds = 10, 3, 4000
	var count [n]int
	for seed := range uint64(seeds) {
		idx := Sample(n, k, seed, 7)
		if len(idx) != k || !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != k {
			t.Fatalf("seed %d: %v is not %d distinct sorted indices", seed, idx, k)
		}
		for _, i := range idx {
			count[i]++
		}
	}
	for i, c := range count {
		if mean := seeds * k / n; c < mean-145 || c > mean+145 {
			t.Errorf("index %d drawn %d times, want about %d", i, c, mean)
		}
	}
	if got := Sample(5, 0, 1, 1); len(got) != 0 {
		t.Errorf("Sample(5, 0) = %v", got)
	}
	if got := Sample(5, 5, 1, 1); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("Sample(5, 5) = %v", got)
	}
}

func TestTooFewRows(t *testing.T) {
	n := len(load(t, Spec{Path: "testdata/docs.txt"}, Options{Seq: 32}).Rows)
	_, err := Load([]Spec{{Path: "testdata/docs.txt", Rows: n + 1}}, tiny(t), Options{Seq: 32})
	if !errors.Is(err, ErrTooFewRows) || !strings.Contains(err.Error(), "testdata/docs.txt") ||
		!strings.Contains(err.Error(), "available") || !strings.Contains(err.Error(), " "+strconv.Itoa(n)+" rows") ||
		!strings.Contains(err.Error(), strconv.Itoa(n+1)+" asked") {
		t.Errorf("error %v, want ErrTooFewRows naming the file, %d available and %d asked", err, n, n+1)
	}
	// A file too short for one row.
	path := filepath.Join(t.TempDir(), "short.txt")
	if err := os.WriteFile(path, []byte("tiny"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load([]Spec{{Path: path}}, tiny(t), Options{Seq: 100}); !errors.Is(err, ErrTooFewRows) {
		t.Errorf("short file: error %v, want ErrTooFewRows", err)
	}
}

func TestLoadErrors(t *testing.T) {
	tok := tiny(t)
	docs := Spec{Path: "testdata/docs.txt"}
	tests := []struct {
		name  string
		specs []Spec
		tok   *tokenizer.Tokenizer
		opt   Options
		is    error    // nil: any error
		want  []string // substrings of the message
	}{
		{"nil tokenizer", []Spec{docs}, nil, Options{}, nil, []string{"tokenizer"}},
		{"negative seq", []Spec{docs}, tok, Options{Seq: -1}, nil, []string{"-1"}},
		{"no specs", nil, tok, Options{}, ErrSpec, nil},
		{"empty path", []Spec{{}}, tok, Options{}, ErrSpec, nil},
		{"negative rows", []Spec{{Path: "testdata/docs.txt", Rows: -2}}, tok, Options{}, ErrSpec, []string{"testdata/docs.txt", "-2"}},
		{"unknown extension", []Spec{{Path: "testdata/README.md"}}, tok, Options{}, ErrUnsupported, []string{"testdata/README.md", ".txt", ".jsonl", ".json", ".npy"}},
		{"missing file", []Spec{{Path: "testdata/missing.txt"}}, tok, Options{}, os.ErrNotExist, []string{"testdata/missing.txt"}},
		{"second spec bad", []Spec{docs, {Path: "nope.bin"}}, tok, Options{Seq: 8}, ErrUnsupported, []string{"nope.bin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.specs, tc.tok, tc.opt)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSetRecipeAndHoldOut(t *testing.T) {
	specs := []Spec{{Path: "testdata/docs.txt", Rows: 5}, {Path: "testdata/chat.jsonl"}}
	opt := Options{Seq: 24, Seed: 9}
	s, err := Load(specs, tiny(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Recipe()
	if r.Rows != len(s.Rows) || r.Tokens != len(s.Rows)*24 || r.Vocab != tiny(t).VocabSize() || len(r.Sources) != 2 {
		t.Errorf("recipe %+v", r)
	}
	if r.Sources[0].Rows+r.Sources[1].Rows != len(s.Rows) {
		t.Errorf("sources %+v do not add up to %d rows", r.Sources, len(s.Rows))
	}
	for _, src := range r.Sources {
		data, err := os.ReadFile(src.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(src.SHA256) != 64 || src.SHA256 != sha256Hex(data) {
			t.Errorf("%s: sha256 %s", src.Path, src.SHA256)
		}
	}
	// The recipe survives JSON and replays to the same rows.
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Recipe
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	again, err := Load(back.Specs(), tiny(t), back.Options)
	if err != nil {
		t.Fatal(err)
	}
	if again.Fingerprint() != r.Fingerprint {
		t.Errorf("replayed recipe %s gives fingerprint %s, want %s", js, again.Fingerprint(), r.Fingerprint)
	}
	// One changed id changes the fingerprint.
	s.Rows[0][0] ^= 1
	if s.Fingerprint() == r.Fingerprint {
		t.Error("fingerprint ignores the ids")
	}
	s.Rows[0][0] ^= 1

	train, held, err := s.HoldOut(3)
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Rows)
	if len(train) != n-3 || len(held) != 3 || !slices.Equal(held[2], s.Rows[n-1]) || !slices.Equal(train[0], s.Rows[0]) {
		t.Errorf("HoldOut(3) of %d rows: %d + %d", n, len(train), len(held))
	}
	if cap(train) != len(train) {
		t.Error("appending to train would overwrite held-out rows")
	}
	for _, k := range []int{-1, n + 1} {
		if _, _, err := s.HoldOut(k); err == nil {
			t.Errorf("HoldOut(%d) of %d rows: no error", k, n)
		}
	}
	if train, held, err := s.HoldOut(0); err != nil || len(train) != n || len(held) != 0 {
		t.Errorf("HoldOut(0): %d, %d, %v", len(train), len(held), err)
	}
}
