package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAB: `forge ab` records a plain and a drafted reply per seed (every
// field the issue names, the build and both model fingerprints in each),
// and the teacher-forced part finds the verify blocks equal to decode
// steps at every row: KL 0 and top-1 100%, which exact blocks give. The
// JSON and the PNG are written once: a second run naming them fails and
// leaves them as they were. Without --draft it is a one-line error.
func TestAB(t *testing.T) {
	dir := t.TempDir()
	js, png := filepath.Join(dir, "ab.json"), filepath.Join(dir, "kl.png")
	args := []string{"ab", "--model", tiny, "--draft", tinyDraft, "--seeds", "1,2", "--max-tokens", "40",
		"--tf", "50", "--block", "6", "--end-marker", "}", "--json", js, "--png", png, "func main() {\n"}
	stdout, stderr, ok := runIn(t, "", args...)
	if !ok {
		t.Fatalf("forge ab: %s", stderr)
	}
	noCrash(t, stderr)
	if !strings.Contains(stdout, "teacher-forced") || !strings.Contains(stdout, "mean tok/s") {
		t.Fatalf("tables: %s", stdout)
	}
	var rep struct {
		Runs []struct {
			Mode    string   `json:"mode"`
			Seed    uint64   `json:"seed"`
			Tokens  int      `json:"tokens"`
			Finish  string   `json:"finish"`
			Loop    *int     `json:"loop"`
			Rep4    *float64 `json:"rep4"`
			TokS    float64  `json:"tok_s"`
			TokCall float64  `json:"tok_call"`
			End     *bool    `json:"end_marker"`
			Build   string   `json:"build"`
			Model   string   `json:"model"`
			Draft   string   `json:"draft"`
		} `json:"runs"`
		TF   int `json:"tf"`
		Rows []struct {
			Row  int     `json:"row"`
			N    int     `json:"n"`
			KL   float64 `json:"kl"`
			Top1 float64 `json:"top1"`
		} `json:"rows"`
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	for i, r := range rep.Runs {
		mode := []string{"plain", "draft"}[i%2]
		if r.Mode != mode || r.Seed != uint64(1+i/2) || r.Tokens == 0 || r.Finish == "" || r.Loop == nil || r.Rep4 == nil ||
			r.TokS <= 0 || r.TokCall <= 0 || r.End == nil || !strings.HasPrefix(r.Build, "forge ") ||
			!strings.HasPrefix(r.Model, "checkpoint:") || (mode == "draft") != strings.HasPrefix(r.Draft, "checkpoint:") {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	if rep.TF == 0 || len(rep.Rows) != 6 {
		t.Fatalf("teacher-forced: %d tokens, %d rows", rep.TF, len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.N == 0 || r.KL != 0 || r.Top1 != 1 {
			t.Fatalf("row %d: %+v (a verify block must equal decode steps)", r.Row, r)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("plot: %v", err)
	}
	_, stderr, ok = runIn(t, "", args...)
	if after, _ := os.ReadFile(js); ok || !strings.Contains(stderr, "never overwrites") || string(after) != string(data) {
		t.Fatalf("second run over the records: ok %v, %q", ok, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "needs --draft"},
		{[]string{"--draft", tinyDraft, "--seeds", "1,x"}, `"x" is not a seed`},
		{[]string{"--draft", tinyDraft, "--block", "0"}, "--block 0"},
		{[]string{"--draft", tinyDraft, "--block", "18"}, "--block 18"},
		{[]string{"--draft", tinyDraft, "--tf=-1"}, "--tf -1"},
	} {
		_, stderr, ok := runIn(t, "", append([]string{"ab", "--model", tiny, "hello"}, c.args...)...)
		noCrash(t, stderr)
		if ok || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: ok %v, %q (want %q)", c.args, ok, stderr, c.want)
		}
	}
}
