package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge"
	"forge/corpus"
	"forge/generate"
	"forge/tokenizer"
)

var examplePrompts = filepath.Join("examples", "prompts.jsonl")

// genRows runs GenerateRows on forge-tiny.
func genRows(t *testing.T, prompts string, seq int, o forge.GenerateOptions) *forge.GeneratedRows {
	t.Helper()
	g, err := forge.GenerateRows(context.Background(), forge.GenerateRowsConfig{Model: tinyDir, Prompts: prompts, Seq: seq, GenerateOptions: o})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGenerateRowsPacking: the rows are the prompts (rendered with the chat
// template, generation prompt and thinking on, as the test renders them
// itself) each followed by its answer, in prompt order, cut into rows of
// exactly Seq tokens with the remainder dropped; an answer ends with an
// EOS id (kept, and the only one in it) or has exactly MaxTokens tokens.
func TestGenerateRowsPacking(t *testing.T) {
	const seq, maxTokens = 64, 128
	g := genRows(t, examplePrompts, seq, forge.GenerateOptions{MaxTokens: maxTokens, Seed: 3})
	tok, err := tokenizer.Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	convs, _, err := corpus.ReadConversations(examplePrompts)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Answers) != len(convs) || g.Generation.PromptCount != len(convs) {
		t.Fatalf("%d answers, %d prompts recorded, the file has %d", len(g.Answers), g.Generation.PromptCount, len(convs))
	}
	eos := tok.EOS()
	var stream []int
	nEOS := 0
	for i, a := range g.Answers {
		kw, _ := json.Marshal(map[string]bool{"enable_thinking": true})
		text, err := tok.Chat(convs[i].Messages, tokenizer.ChatOptions{Tools: convs[i].Tools, AddGenerationPrompt: true, Kwargs: kw, ParseArguments: true})
		if err != nil {
			t.Fatal(err)
		}
		if want := tok.Encode(text); !slices.Equal(a.Prompt, want) {
			t.Fatalf("prompt %d: ids differ from the template's rendering %q", i, text)
		}
		n := len(a.Tokens)
		switch a.Finish {
		case generate.FinishStop:
			nEOS++
			if n == 0 || !slices.Contains(eos, a.Tokens[n-1]) || n > maxTokens {
				t.Errorf("answer %d finished at a stop token but ends with %v (%d tokens)", i, a.Tokens[max(0, n-3):], n)
			}
			n-- // the EOS id
		case generate.FinishLength:
			if n != maxTokens {
				t.Errorf("answer %d finished at the length limit with %d tokens, want %d", i, n, maxTokens)
			}
		default:
			t.Errorf("answer %d finished with %q", i, a.Finish)
		}
		for k, id := range a.Tokens[:n] {
			if slices.Contains(eos, id) {
				t.Errorf("answer %d holds the EOS id %d at %d, before its end", i, id, k)
			}
		}
		stream = append(append(stream, a.Prompt...), a.Tokens...)
	}
	// forge-tiny ends some short answers within 128 tokens (3 of these 6 with
	// this seed), so the EOS branch above is exercised.
	if nEOS == 0 || nEOS != g.Generation.AnswersEOS || len(g.Answers)-nEOS != g.Generation.AnswersMax {
		t.Errorf("%d answers ended at EOS; recorded %d at EOS, %d at max tokens", nEOS, g.Generation.AnswersEOS, g.Generation.AnswersMax)
	}
	rows := g.Set.Rows
	if len(rows) != len(stream)/seq || g.Generation.Dropped != len(stream)%seq {
		t.Fatalf("%d rows, %d dropped, from %d tokens in rows of %d", len(rows), g.Generation.Dropped, len(stream), seq)
	}
	for r, row := range rows {
		if len(row) != seq || !slices.Equal(row, stream[r*seq:(r+1)*seq]) {
			t.Fatalf("row %d (%d tokens) is not tokens %d..%d of prompts and answers", r, len(row), r*seq, (r+1)*seq)
		}
	}
	if !slices.Equal(rows[0][:len(g.Answers[0].Prompt)], g.Answers[0].Prompt) {
		t.Error("the first row does not start with the first prompt")
	}
	rec := g.Recipe()
	if rec.Sources[0].Kind != corpus.Generated || rec.Sources[0].Path != examplePrompts || rec.Rows != len(rows) ||
		len(rec.Generation.PromptsSHA256) != 64 || rec.Generation.Temperature != 0.6 || rec.Generation.TopP != 0.95 ||
		rec.Generation.TopK != 20 || !rec.Generation.Think || rec.Generation.MaxTokens != maxTokens || rec.Generation.Seed != 3 {
		t.Errorf("recipe %+v", rec)
	}
}

// TestGenerateRowsSeeds: the same seed gives the same rows, another seed
// other rows; answer i depends only on prompt i, i and the settings, so
// the first two answers are the same whether or not more prompts follow
// (each prompt is a fresh conversation with its own seed).
func TestGenerateRowsSeeds(t *testing.T) {
	raw, err := os.ReadFile(examplePrompts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	dir := t.TempDir()
	three, two := filepath.Join(dir, "three.jsonl"), filepath.Join(dir, "two.jsonl")
	os.WriteFile(three, []byte(lines[0]+lines[1]+lines[2]), 0o644)
	os.WriteFile(two, []byte(lines[0]+lines[1]), 0o644)
	o := forge.GenerateOptions{MaxTokens: 16, Seed: 7}
	a, b := genRows(t, three, 32, o), genRows(t, three, 32, o)
	if !slices.EqualFunc(a.Set.Rows, b.Set.Rows, slices.Equal) {
		t.Error("the same seed gave other rows")
	}
	d := genRows(t, two, 32, o)
	for i := range 2 {
		if !slices.Equal(d.Answers[i].Tokens, a.Answers[i].Tokens) {
			t.Errorf("answer %d differs when the other prompts are left out", i)
		}
	}
	o.Seed = 8
	c := genRows(t, three, 32, o)
	if slices.EqualFunc(a.Set.Rows, c.Set.Rows, slices.Equal) {
		t.Error("seeds 7 and 8 gave the same rows")
	}
}

// TestGenerateRowsErrors: too few tokens for one row, and bad prompt files,
// are errors naming the problem.
func TestGenerateRowsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"messages": [{"role": "user", "content": "hi"}]}`+"\n"+`{"messages": []}`+"\n"), 0o644)
	for _, c := range []struct {
		name    string
		prompts string
		seq     int
		want    string
	}{
		{"too few tokens", examplePrompts, 100000, "fewer than one row of 100000"},
		{"empty messages", bad, 64, "bad.jsonl: line 2"},
		{"missing file", filepath.Join(dir, "none.jsonl"), 64, "none.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := forge.GenerateRows(context.Background(), forge.GenerateRowsConfig{Model: tinyDir, Prompts: c.prompts, Seq: c.seq,
				GenerateOptions: forge.GenerateOptions{MaxTokens: 4}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want a mention of %q", err, c.want)
			}
		})
	}
	_, err := forge.Trace(context.Background(), forge.TraceConfig{Model: tinyDir, Data: []string{examplePrompts},
		Generate: examplePrompts, Out: filepath.Join(dir, "t.trace")})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("a trace of data and generated answers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = forge.GenerateRows(ctx, forge.GenerateRowsConfig{Model: tinyDir, Prompts: examplePrompts, Seq: 64})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
