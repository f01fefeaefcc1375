package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/lut"
)

// runReport is the part of `forge run --json` the tests read.
type runReport struct {
	Text     string  `json:"text"`
	Tokens   []int   `json:"tokens"`
	Finish   string  `json:"finish_reason"`
	Prompt   int     `json:"prompt_tokens"`
	Prefill  float64 `json:"prefill_tps"`
	Decode   float64 `json:"decode_tps"`
	Settings struct {
		Temperature float64 `json:"temperature"`
		TopK        int     `json:"top_k"`
		TopP        float64 `json:"top_p"`
		Seed        uint64  `json:"seed"`
		Think       bool    `json:"think"`
	} `json:"settings"`
}

func runJSON(t *testing.T, args ...string) runReport {
	t.Helper()
	stdout, stderr, ok := runIn(t, "", append([]string{"run", "--model", tiny, "--json"}, args...)...)
	if !ok {
		t.Fatalf("forge run %v: %s", args, stderr)
	}
	var r runReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return r
}

// TestRunStreamsAndSummarises: `forge run` streams the reply to stdout
// and one summary line to stderr; --json's text and ids agree with it.
func TestRunStreamsAndSummarises(t *testing.T) {
	stdout, stderr, ok := runIn(t, "", "run", "--model", tiny, "def fib(n):", "--temperature", "0", "--max-tokens", "24")
	if !ok || strings.TrimSpace(stdout) == "" {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	noCrash(t, stderr)
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "generated 24 tokens") || !strings.Contains(lines[0], "finish length") {
		t.Fatalf("summary: %q", stderr)
	}
	r := runJSON(t, "def fib(n):", "--temperature", "0", "--max-tokens", "24")
	if r.Text+"\n" != stdout || len(r.Tokens) != 24 || r.Finish != "length" || r.Prompt != 5 || r.Prefill <= 0 || r.Decode <= 0 {
		t.Fatalf("json %+v\nstreamed %q", r, stdout)
	}
}

// TestRunSeedAndDefaults: the same seed gives the same reply, another
// seed another; unset sampling flags take the reference's defaults
// (0.7/0.8/20, or 1.0/0.95/20 with --think) and the seed is reported.
func TestRunSeedAndDefaults(t *testing.T) {
	a := runJSON(t, "The river", "--seed", "11", "--max-tokens", "32", "--loop-guard", "0")
	b := runJSON(t, "The river", "--seed", "11", "--max-tokens", "32", "--loop-guard", "0")
	c := runJSON(t, "The river", "--seed", "12", "--max-tokens", "32", "--loop-guard", "0")
	if !slices.Equal(a.Tokens, b.Tokens) || slices.Equal(a.Tokens, c.Tokens) {
		t.Fatalf("seed 11: %v / %v; seed 12: %v", a.Tokens, b.Tokens, c.Tokens)
	}
	if s := a.Settings; s.Temperature != 0.7 || s.TopP != 0.8 || s.TopK != 20 || s.Seed != 11 || s.Think {
		t.Fatalf("defaults %+v", s)
	}
	msgs := filepath.Join(t.TempDir(), "chat.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"Hello"}]`), 0o644)
	d := runJSON(t, "--messages", msgs, "--think", "--max-tokens", "8")
	if s := d.Settings; s.Temperature != 1 || s.TopP != 0.95 || s.TopK != 20 || !s.Think || s.Seed == 0 {
		t.Fatalf("think defaults %+v", s)
	}
}

// TestRunBadInput: each is a one-line error, exit status 1 or 2, no crash.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	noTemplate := filepath.Join(dir, "no-template")
	copyTree(t, tiny, noTemplate)
	os.Remove(filepath.Join(noTemplate, "chat_template.jinja"))
	cfgPath := filepath.Join(noTemplate, "tokenizer_config.json")
	var tc map[string]any
	data, _ := os.ReadFile(cfgPath)
	json.Unmarshal(data, &tc)
	delete(tc, "chat_template")
	data, _ = json.Marshal(tc)
	os.WriteFile(cfgPath, data, 0o644)
	msgs := filepath.Join(dir, "chat.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"Hello"}]`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"role":"user"`), 0o644)
	long := strings.Repeat("word ", 5000)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty prompt", []string{"--model", tiny, ""}, "empty"},
		{"no prompt", []string{"--model", tiny}, "empty"},
		{"prompt longer than the context", []string{"--model", tiny, long}, "context"},
		{"max tokens 0", []string{"--model", tiny, "hi", "--max-tokens", "0"}, "--max-tokens 0"},
		{"empty stop string", []string{"--model", tiny, "hi", "--stop", ""}, "stop string may not be empty"},
		{"bad stop escape", []string{"--model", tiny, "hi", "--stop", `a\q`}, "unknown escape"},
		{"no chat template", []string{"--model", noTemplate, "--messages", msgs}, "template"},
		{"malformed messages", []string{"--model", tiny, "--messages", bad}, "bad.json"},
		{"non-UTF-8 prompt", []string{"--model", tiny, "caf\xe9"}, "UTF-8"},
		{"top-p over 1", []string{"--model", tiny, "hi", "--top-p", "1.5"}, "top_p"},
		{"prompt and messages", []string{"--model", tiny, "hi", "--messages", msgs}, "not both"},
		{"bad think budget", []string{"--model", tiny, "hi", "--think-budget", "lots"}, "--think-budget"},
	}
	for _, tc := range tests {
		stdout, stderr, ok := runIn(t, "", append([]string{"run"}, tc.args...)...)
		noCrash(t, stderr)
		if ok || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%s: ok=%v stdout %q stderr %q, want an error mentioning %q", tc.name, ok, stdout, stderr, tc.want)
		}
	}
}

// TestRunClosedPipe: a reader that goes away (| head -c 5) ends the reply
// cleanly: exit status 0, no crash, the summary printed.
func TestRunClosedPipe(t *testing.T) {
	cmd := exec.Command("sh", "-c", forgeBin+` run --model `+tiny+` "def fib(n):" --max-tokens 2000 --loop-guard 0 | head -c 5`)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil || len(out) != 5 {
		t.Fatalf("err %v, stdout %q, stderr %s", err, out, errb.String())
	}
	noCrash(t, errb.String())
	if !strings.Contains(errb.String(), "finish cancel") {
		t.Fatalf("stderr %q", errb.String())
	}
}

// TestChatKeepsState: a scripted chat reuses the conversation's state on
// the second turn, /save writes the conversation (and never over a file),
// /reset starts cold.
func TestChatKeepsState(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "conv.json")
	script := "Hello there\nTell me more\n/save " + saved + "\n/save " + saved + "\n/reset\nHello there\n"
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte(script), 0o644)
	stdout, stderr, ok := runIn(t, in, "chat", "--model", tiny, "--max-tokens", "12", "--seed", "3")
	noCrash(t, stderr)
	if !ok {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	var summaries []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "forge: prompt ") {
			summaries = append(summaries, l)
		}
	}
	if len(summaries) != 3 || !strings.Contains(summaries[0], "(0 cached)") || strings.Contains(summaries[1], "(0 cached)") || !strings.Contains(summaries[2], "(0 cached)") {
		t.Fatalf("summaries %q", summaries)
	}
	var conv []map[string]string
	data, err := os.ReadFile(saved)
	if err != nil || json.Unmarshal(data, &conv) != nil || len(conv) != 4 || conv[0]["role"] != "user" || conv[1]["role"] != "assistant" || conv[2]["content"] != "Tell me more" {
		t.Fatalf("saved %s (%v)", data, err)
	}
	if !strings.Contains(stderr, "already exists") || !strings.Contains(stderr, "conversation reset") {
		t.Fatalf("stderr %q", stderr)
	}
	// The saved conversation continues with --messages.
	r := runJSON(t, "--messages", saved, "--max-tokens", "4")
	if len(r.Tokens) == 0 || r.Prompt < 10 {
		t.Fatalf("continue: %+v", r)
	}
}

// TestBenchJSON: forge bench reports positive speeds, the weights a
// decode step reads and its share of the bandwidth measured in the run.
func TestBenchJSON(t *testing.T) {
	stdout, stderr, ok := runIn(t, "", "bench", "--model", tiny, "--prompt-tokens", "32", "--gen", "16", "--repeat", "2", "--json")
	if !ok {
		t.Fatalf("%s", stderr)
	}
	var r struct {
		Prefill, Decode, BW, Pct, BPW float64
		PctBest, ReadBest             float64
		Weight                        int64
		Runs, Read                    []float64
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatal(err, stdout)
	}
	for k, p := range map[string]any{"prefill_tps": &r.Prefill, "decode_tps": &r.Decode, "bandwidth_gbs": &r.BW,
		"bandwidth_pct": &r.Pct, "bpw": &r.BPW, "weight_bytes": &r.Weight, "decode_runs_tps": &r.Runs, "read_runs_gbs": &r.Read,
		"bandwidth_pct_best": &r.PctBest, "read_best_gbs": &r.ReadBest} {
		if err := json.Unmarshal(raw[k], p); err != nil {
			t.Fatalf("field %s: %v in %s", k, err, stdout)
		}
	}
	if r.Prefill <= 0 || r.Decode <= 0 || r.BW <= 0 || r.Pct <= 0 || r.BPW < 15 || r.BPW > 17 || r.Weight <= 0 || len(r.Runs) != 2 || len(r.Read) != 2 {
		t.Fatalf("%+v", r)
	}
	// A repetition's bandwidth is a weighted mean of passes, never above
	// the fastest pass; the stricter share is decode's traffic over that pass.
	for _, g := range r.Read {
		if g <= 0 || g > r.ReadBest {
			t.Fatalf("read %v GB/s against the best pass %v: %+v", g, r.ReadBest, r)
		}
	}
	if math.Abs(r.PctBest-100*r.BW/r.ReadBest) > 1e-9*r.PctBest {
		t.Fatalf("bandwidth_pct_best %v, want 100·%v/%v", r.PctBest, r.BW, r.ReadBest)
	}
	table, stderr, ok := runIn(t, "", "bench", "--model", tiny, "--prompt-tokens", "32", "--gen", "16", "--repeat", "1")
	if !ok || !strings.Contains(table, "pp32") || !strings.Contains(table, "tg16") || !strings.Contains(table, "% read bw") {
		t.Fatalf("table %q %s", table, stderr)
	}
}

// TestEvalKVInt8: scoring the trace's own reference measures only the KV
// cache: with the f32 cache the KL is 0 (the same computation), with the
// int8 cache it is positive and small, and the report says which cache.
func TestEvalKVInt8(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "ref.trace")
	if _, stderr, ok := runIn(t, "", "trace", "--model", tiny, "--data", filepath.Join("..", "..", "data", "prose-heldout.txt:2"), "--ctx", "256", "--out", tr); !ok {
		t.Fatal(stderr)
	}
	kl := map[string]float64{}
	for _, kv := range []string{"f32", "int8"} {
		out := filepath.Join(dir, kv+".json")
		if _, stderr, ok := runIn(t, "", "eval", "--trace", tr, "--model", tiny, "--kv", kv, "--json", out); !ok {
			t.Fatal(stderr)
		}
		var r struct {
			MeanKL float64 `json:"mean_kl"`
			KV     string  `json:"kv"`
		}
		data, _ := os.ReadFile(out)
		if err := json.Unmarshal(data, &r); err != nil || (kv == "int8") != (r.KV == "int8") {
			t.Fatalf("%s: %v %s", kv, err, data)
		}
		kl[kv] = r.MeanKL
	}
	if kl["f32"] > 1e-9 || kl["int8"] <= 1e-7 || kl["int8"] > 0.01 {
		t.Fatalf("mean KL f32 %g, int8 %g", kl["f32"], kl["int8"])
	}
}

// TestChatInterruptKeepsConversation: Ctrl-C (SIGINT) during a reply
// stops that reply only; the chat goes on reading, and the conversation
// saved afterwards holds the question and the partial answer.
func TestChatInterruptKeepsConversation(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "conv.json")
	cmd := exec.Command(forgeBin, "chat", "--model", tiny, "--max-tokens", "4000", "--loop-guard", "0", "--seed", "5")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "Tell me a long story\n")
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(out, buf, 16); err != nil { // the reply is streaming
		t.Fatal(err)
	}
	cmd.Process.Signal(os.Interrupt)
	io.WriteString(in, "/save "+saved+"\n")
	in.Close()
	go io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	noCrash(t, errb.String())
	var conv []map[string]string
	data, _ := os.ReadFile(saved)
	if err := json.Unmarshal(data, &conv); err != nil || len(conv) != 2 || conv[0]["content"] != "Tell me a long story" || conv[1]["role"] != "assistant" {
		t.Fatalf("saved %s (%v); stderr %s", data, err, errb.String())
	}
	if !strings.Contains(errb.String(), "finish cancel (interrupted)") {
		t.Fatalf("stderr %q", errb.String())
	}
}

// TestBenchChatBadInput: bench's sizes, chat's starting conversation and
// serve's slots, queue, cache, prompt limit and address are checked before any work, each a
// one-line error.
func TestBenchChatBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"role":"user"`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--model", tiny, "--gen", "0"}, "--gen 0"},
		{[]string{"bench", "--model", tiny, "--prompt-tokens", "5000"}, "context"},
		{[]string{"bench", "--model", tiny, "--kv", "int4"}, "--kv"},
		{[]string{"chat", "--model", tiny, "--messages", bad}, "bad.json"},
		{[]string{"chat", "--model", tiny, "--max-tokens", "0"}, "--max-tokens 0"},
		{[]string{"serve", "--model", tiny, "--parallel", "0"}, "--parallel 0"},
		{[]string{"serve", "--model", tiny, "--queue=-1"}, "--queue -1"},
		{[]string{"serve", "--model", tiny, "--cache-mb=-1"}, "--cache-mb -1"},
		{[]string{"serve", "--model", tiny, "--max-prompt-tokens=-5"}, "--max-prompt-tokens -5"},
		{[]string{"serve", "--model", tiny, "--port", "70000"}, "--port 70000"},
	} {
		stdout, stderr, ok := runIn(t, "", tc.args...)
		noCrash(t, stderr)
		if ok || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: ok=%v stdout %q stderr %q, want an error mentioning %q", tc.args, ok, stdout, stderr, tc.want)
		}
	}
}

// TestActInt8: on a LUT4 bundle, run and bench default to int8
// activations and say so (--act f32 is exact); eval scores them against the
// bundle's own trace: with --act f32 the KL is 0 (the same computation),
// with --act int8 positive and far below LUT4's own cost (mean KL ~0.009
// against bf16; int8 activations ~7e-5, bound 1e-3), and the report names
// the precision.
func TestActInt8(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "lut4")
	if out, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT4 per-tensor + pcs"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	auto := "f32" // the default, auto: int8 only where the CPU has int8 kernels
	if lut.Int8Kernels() {
		auto = "int8"
	}
	for _, act := range []string{"", "auto", "f32", "int8"} {
		args := []string{"run", "--model", b, "--json", "--temperature", "0", "--max-tokens", "8", "def f():"}
		bargs := []string{"bench", "--model", b, "--prompt-tokens", "8", "--gen", "8", "--repeat", "1", "--json"}
		want := act
		if act != "" {
			args, bargs = append(args, "--act", act), append(bargs, "--act", act)
		}
		if act == "" || act == "auto" {
			want = auto
		}
		stdout, stderr, ok := runIn(t, "", args...)
		var r struct {
			Tokens   []int `json:"tokens"`
			Settings struct {
				Act string `json:"act"`
			} `json:"settings"`
		}
		if !ok || json.Unmarshal([]byte(stdout), &r) != nil || r.Settings.Act != want || len(r.Tokens) != 8 {
			t.Fatalf("run --act %q: %+v %s %s", act, r, stdout, stderr)
		}
		stdout, stderr, ok = runIn(t, "", bargs...)
		var br struct {
			Act    string  `json:"act"`
			Decode float64 `json:"decode_tps"`
		}
		if !ok || json.Unmarshal([]byte(stdout), &br) != nil || br.Act != want || br.Decode <= 0 {
			t.Fatalf("bench --act %q: %+v %s %s", act, br, stdout, stderr)
		}
	}
	tr := filepath.Join(dir, "lut4.trace")
	if _, stderr, ok := runIn(t, "", "trace", "--model", b, "--data", filepath.Join("..", "..", "data", "code-heldout.txt:2"), "--ctx", "256", "--out", tr); !ok {
		t.Fatal(stderr)
	}
	for _, act := range []string{"f32", "int8"} {
		out := filepath.Join(dir, act+".json")
		if _, stderr, ok := runIn(t, "", "eval", "--trace", tr, "--model", b, "--act", act, "--json", out); !ok {
			t.Fatal(stderr)
		}
		var r struct {
			MeanKL float64 `json:"mean_kl"`
			Act    string  `json:"act"`
		}
		data, _ := os.ReadFile(out)
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case act == "f32" && (r.MeanKL != 0 || r.Act != ""):
			t.Errorf("--act f32: mean KL %v (want 0), act %q (want none)", r.MeanKL, r.Act)
		case act == "int8" && (r.MeanKL <= 0 || r.MeanKL >= 1e-3 || r.Act != "int8"):
			t.Errorf("--act int8: mean KL %v (want in (0, 1e-3)), act %q", r.MeanKL, r.Act)
		}
	}
}
