package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var tinyDraft = filepath.Join("..", "..", "models", "forge-tiny-draft")

// TestRunDraft: `forge run --draft` gives plain decoding's greedy reply,
// and its JSON records the drafter (name, fingerprints, k) with the
// acceptance histogram and tokens per target call; the summary line says
// how drafting went.
func TestRunDraft(t *testing.T) {
	prompt := "func main() {\n\tfmt.Println("
	plain := runJSON(t, prompt, "--temperature", "0", "--max-tokens", "60", "--loop-guard", "0")
	stdout, stderr, ok := runIn(t, "", "run", "--model", tiny, "--json", prompt, "--temperature", "0", "--max-tokens", "60",
		"--loop-guard", "0", "--draft", tinyDraft, "--draft-k", "4")
	if !ok {
		t.Fatalf("forge run --draft: %s", stderr)
	}
	var r struct {
		runReport
		Draft struct {
			Name        string `json:"name"`
			Fingerprint string `json:"fingerprint"`
			Tokenizer   string `json:"tokenizer"`
			K           int    `json:"k"`
			Drafted     int    `json:"drafted"`
		} `json:"draft"`
		AcceptHist    []int   `json:"accept_hist"`
		TokensPerCall float64 `json:"tokens_per_call"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if !slices.Equal(r.Tokens, plain.Tokens) {
		t.Fatalf("drafted reply %v, plain %v", r.Tokens, plain.Tokens)
	}
	d := r.Draft
	if d.Name != "forge-tiny-draft" || len(d.Fingerprint) != 64 || len(d.Tokenizer) != 16 || d.K != 4 ||
		len(r.AcceptHist) != 5 || r.TokensPerCall <= 0 {
		t.Fatalf("draft record %+v, histogram %v, tokens per call %v", d, r.AcceptHist, r.TokensPerCall)
	}
	if !strings.Contains(stderr, "tokens per target call") {
		t.Fatalf("summary: %q", stderr)
	}
}

// TestDraftBadInput: a draft length outside 1–16, --draft-k without
// --draft, and a drafter whose tokenizer gives an id another token are
// refused with a one-line error naming the problem.
func TestDraftBadInput(t *testing.T) {
	other := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer_config.json", "generation_config.json"} {
		data, err := os.ReadFile(filepath.Join(tinyDraft, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(other, f), data, 0o644)
	}
	tj, _ := os.ReadFile(filepath.Join(tinyDraft, "tokenizer.json"))
	swapped := strings.NewReplacer(`"de": 300`, `"de": 301`, `"Ġ=": 301`, `"Ġ=": 300`).Replace(string(tj))
	os.WriteFile(filepath.Join(other, "tokenizer.json"), []byte(swapped), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft", tinyDraft, "--draft-k", "17"}, "--draft-k"},
		{[]string{"--draft", tinyDraft, "--draft-k=-1"}, "--draft-k"},
		{[]string{"--draft-k", "3"}, "--draft-k needs --draft"},
		{[]string{"--draft", other}, "token 300"},
	} {
		_, stderr, ok := runIn(t, "", append([]string{"run", "--model", tiny, "hello", "--max-tokens", "4"}, c.args...)...)
		noCrash(t, stderr)
		if ok || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: ok %v, stderr %q (want %q)", c.args, ok, stderr, c.want)
		}
	}
	// forge serve checks the same before it listens.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft-k", "3"}, "--draft-k needs --draft"},
		{[]string{"--draft", tinyDraft, "--draft-k", "20"}, "--draft-k"},
		{[]string{"--draft", other, "--port", "1"}, "token 300"},
	} {
		_, stderr, ok := runIn(t, "", append([]string{"serve", "--model", tiny}, c.args...)...)
		noCrash(t, stderr)
		if ok || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %v: ok %v, stderr %q (want %q)", c.args, ok, stderr, c.want)
		}
	}
}
