package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 10: absurd sizes, damaged weights and interrupted runs, through
// the binary. None may end in a Go stack trace, an out-of-memory crash or a
// NaN printed as a result.

// noCrash fails the test when output shows a Go panic or runtime failure.
func noCrash(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"goroutine ", "panic:", "fatal error", "runtime."} {
		if strings.Contains(out, s) {
			t.Fatalf("a crash (%q):\n%s", s, out)
		}
	}
}

// editConfig copies forge-tiny to a new directory with its text config
// edited by fn.
func editConfig(t *testing.T, fn func(tc map[string]any)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	copyTree(t, tiny, dir)
	raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	fn(c["text_config"].(map[string]any))
	raw, _ = json.Marshal(c)
	os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644)
	return dir
}

// TestAbsurdSizes: configs and sizes that once ran the machine out of
// memory or panicked are refused by every command, naming the field.
func TestAbsurdSizes(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(tok, []byte(`[1, 2, 3]`), 0o644)
	configs := []struct {
		name, field string
		edit        func(tc map[string]any)
	}{
		{"1e9 layers", "num_hidden_layers", func(tc map[string]any) { tc["num_hidden_layers"] = 1e9; delete(tc, "layer_types") }},
		{"1e12 layers", "num_hidden_layers", func(tc map[string]any) { tc["num_hidden_layers"] = 1e12; delete(tc, "layer_types") }},
		{"2^62 layers", "num_hidden_layers", func(tc map[string]any) {
			tc["num_hidden_layers"] = json.Number("4611686018427387904")
			delete(tc, "layer_types")
		}},
		{"2^40 hidden", "hidden_size", func(tc map[string]any) { tc["hidden_size"] = json.Number("1099511627776") }},
		{"2^62 vocabulary", "vocab_size", func(tc map[string]any) { tc["vocab_size"] = json.Number("4611686018427387904") }},
		{"vocabulary × hidden too large", "vocab_size × hidden_size", func(tc map[string]any) { tc["vocab_size"], tc["hidden_size"] = 1<<24, 1<<20 }},
		{"negative context", "max_position_embeddings", func(tc map[string]any) { tc["max_position_embeddings"] = -5 }},
	}
	for _, c := range configs {
		m := editConfig(t, c.edit)
		out := t.TempDir()
		for _, args := range [][]string{
			{"inspect", m},
			{"logits", "--model", m, "--tokens", tok, "--out", filepath.Join(out, "l.safetensors")},
			{"quantize", "--model", m, "--out", filepath.Join(out, "q"), "--format", "LUT4 per-tensor + pcs"},
			{"snr", "--model", m, "--formats", "LUT4 per-tensor + pcs"},
			{"synth", "--config", filepath.Join(m, "config.json"), "--out", filepath.Join(out, "s")},
		} {
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				o, err := run(t, args...)
				noCrash(t, o)
				if err == nil || !strings.Contains(o, c.field) {
					t.Errorf("%v, want a refusal naming %s:\n%s", err, c.field, o)
				}
			})
		}
	}
	for _, shape := range []string{"100000x100000", "1000000000x1000000000"} {
		o, err := run(t, "snr", "--gaussian", shape, "--formats", "LUT4 per-tensor + pcs")
		noCrash(t, o)
		if err == nil || !strings.Contains(o, "too large for this machine") {
			t.Errorf("snr --gaussian %s: %v\n%s", shape, err, o)
		}
	}
}

// TestZeroSizesRefused: --seq 0 and --ctx 0 used to fall back silently to
// the defaults.
func TestZeroSizesRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "testdata", "calib", "code.txt")
	for _, args := range [][]string{
		{"trace", "--model", tiny, "--data", data + ":2", "--seq", "0", "--out", filepath.Join(dir, "t")},
		{"trace", "lcpp", "--model", tiny, "--data", data, "--ctx", "0", "--out", filepath.Join(dir, "t")},
		{"ppl", "--model", tiny, "--data", data, "--ctx", "0"},
		{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "LUT4 per-tensor + pcs", "--aw", "--calib", data + ":2", "--ctx", "0"},
	} {
		o, err := run(t, args...)
		if err == nil || !strings.Contains(o, "want a positive number") {
			t.Errorf("%v: %v\n%s", args, err, o)
		}
	}
}

// poisonWeight copies forge-tiny and sets one bf16 weight of tensor name
// to NaN in the copy's model.safetensors.
func poisonWeight(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	copyTree(t, tiny, dir)
	path := filepath.Join(dir, "model.safetensors")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var info struct {
		DType   string `json:"dtype"`
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[name], &info); err != nil || info.DType != "BF16" {
		t.Fatalf("%s: %v %+v", name, err, info)
	}
	at := 8 + int(n) + info.Offsets[0] + 2*100
	binary.LittleEndian.PutUint16(raw[at:], uint16(math.Float32bits(float32(math.NaN()))>>16))
	os.WriteFile(path, raw, 0o644)
	return dir
}

// TestNonFiniteWeights: one NaN weight used to give all-NaN logits printed
// as a result with exit 0. Now every command that runs the model fails,
// naming the first activation that went bad; quantize names the weight.
func TestNonFiniteWeights(t *testing.T) {
	m := poisonWeight(t, "model.language_model.layers.2.mlp.down_proj.weight")
	dir := t.TempDir()
	tok := filepath.Join(dir, "t.json")
	os.WriteFile(tok, []byte(`[1116, 2239, 275, 1030]`), 0o644)
	data := filepath.Join("..", "..", "testdata", "calib", "code.txt")
	clean := filepath.Join(dir, "clean.trace")
	if o, err := run(t, "trace", "--model", tiny, "--data", data+":2", "--ctx", "32", "--out", clean); err != nil {
		t.Fatal(err, o)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"logits", "--model", m, "--tokens", tok, "--out", filepath.Join(dir, "l")}, "layers.2.mlp_out"},
		{[]string{"logits", "--model", m, "--tokens", tok, "--decode", "--out", filepath.Join(dir, "l")}, "layers.2.mlp_out"},
		{[]string{"trace", "--model", m, "--data", data + ":2", "--ctx", "32", "--out", filepath.Join(dir, "t")}, "layers.2.mlp_out"},
		{[]string{"eval", "--trace", clean, "--model", m}, "layers.2.mlp_out"},
		{[]string{"ppl", "--model", m, "--data", data, "--ctx", "32"}, "layers.2.mlp_out"},
		{[]string{"trace", "lcpp", "--model", m, "--data", data, "--ctx", "16", "--out", filepath.Join(dir, "b")}, "layers.2.mlp_out"},
		{[]string{"quantize", "--model", m, "--out", filepath.Join(dir, "q"), "--format", "LUT4 per-tensor + pcs"}, "NaN"},
		{[]string{"quantize", "--model", m, "--out", filepath.Join(dir, "q"), "--format", "LUT4 per-tensor + pcs"}, "was kept: run the same command with --resume"},
	} {
		o, err := run(t, c.args...)
		noCrash(t, o)
		if err == nil || !strings.Contains(o, c.want) || strings.Contains(strings.ToLower(o), "p = nan") {
			t.Errorf("%v: %v, want a refusal naming %q:\n%s", c.args, err, c.want, o)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 { // the trace, the tokens and q.work
		t.Errorf("outputs were left: %v", ents)
	}
}

// TestQuantizeInterruptKeepsWork: an interrupted quantize says that its
// finished matrices were kept, how big they are and how to resume or
// remove them; the resumed run finishes the same bundle as one whole run.
func TestQuantizeInterruptKeepsWork(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "testdata", "calib", "code.txt")
	args := func(out string) []string {
		return []string{"quantize", "--model", tiny, "--out", out, "--format", "LUT4 per-tensor + pcs", "--method", "gptq",
			"--calib", data + ":6", "--ctx", "128"}
	}
	out := filepath.Join(dir, "b")
	cmd := exec.Command(forgeBin, args(out)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(filepath.Join(out+".work", "*.safetensors")); len(m) >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v:\n%s", err, stderr.String())
	}
	for _, want := range []string{"interrupted", out + ".work", "was kept", "--resume", "rm -r " + out + ".work"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the message lacks %q:\n%s", want, stderr.String())
		}
	}
	if o, err := run(t, append(args(out), "--resume")...); err != nil {
		t.Fatal(err, o)
	}
	whole := filepath.Join(dir, "whole")
	if o, err := run(t, args(whole)...); err != nil {
		t.Fatal(err, o)
	}
	a, _ := os.ReadFile(filepath.Join(out, "model-00001-of-00001.safetensors"))
	b, _ := os.ReadFile(filepath.Join(whole, "model-00001-of-00001.safetensors"))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("the resumed bundle differs from a whole run's")
	}
}

// TestFlagErrorIsShort: a mistyped flag prints the error and where the
// help is, not the whole usage text before it.
func TestFlagErrorIsShort(t *testing.T) {
	out, err := run(t, "quantize", "--model", tiny, "--out", "x", "--formt", "bf16")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || len(lines) > 3 || !strings.Contains(lines[0], "--formt") || !strings.Contains(out, "forge quantize --help") {
		t.Errorf("%v, %d lines:\n%s", err, len(lines), out)
	}
}

// TestUnfinishedBundleAndContext: a bundle whose forge.json is missing is
// named as such (it used to be reported as a checkpoint without
// model.safetensors), and a sequence longer than the model's context is
// refused before it runs.
func TestUnfinishedBundleAndContext(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "b")
	if o, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT4 per-tensor + pcs"); err != nil {
		t.Fatal(err, o)
	}
	os.Remove(filepath.Join(b, "forge.json"))
	long := filepath.Join(dir, "long.json")
	os.WriteFile(long, []byte("["+strings.Repeat("17, ", 4096)+"17]"), 0o644) // 4097 tokens; forge-tiny holds 4096
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", b}, "has no forge.json"},
		{[]string{"logits", "--model", b, "--tokens", long, "--out", filepath.Join(dir, "l")}, "has no forge.json"},
		{[]string{"logits", "--model", tiny, "--tokens", long, "--out", filepath.Join(dir, "l")}, "longer than the model's context of 4096"},
	} {
		o, err := run(t, c.args...)
		if err == nil || !strings.Contains(o, c.want) {
			t.Errorf("%v: %v, want %q:\n%s", c.args[0], err, c.want, o)
		}
	}
}

// TestFirstRunMessages: `forge eval --help` shows how to score; evaluation
// errors speak of evaluation data, not calibration; a low-rank correction
// says what it adds to each part's size.
func TestFirstRunMessages(t *testing.T) {
	dir := t.TempDir()
	if o, _ := run(t, "eval", "--help"); !strings.Contains(o, "forge eval --trace TRACE --model CANDIDATE") {
		t.Errorf("eval --help:\n%s", o)
	}
	for _, args := range [][]string{
		{"trace", "--model", tiny, "--data", filepath.Join(dir, "none.txt"), "--out", filepath.Join(dir, "t")},
		{"ppl", "--model", tiny, "--data", filepath.Join(dir, "none.txt")},
		{"trace", "--model", tiny, "--data", filepath.Join("..", "..", "testdata", "calib", "code.txt") + ":999", "--out", filepath.Join(dir, "t")},
	} {
		if o, err := run(t, args...); err == nil || strings.Contains(strings.ToLower(o), "calibration") || !strings.Contains(o, "evaluation data") && args[0] == "trace" {
			t.Errorf("%v: %v\n%s", args, err, o)
		}
	}
	// Reconstruction settings that cannot run are refused before any work, naming the flag.
	calib := filepath.Join("..", "..", "testdata", "calib", "code.txt") + ":4"
	for _, c := range []struct{ flag, value, want string }{
		{"--recon-lr-lut", "0", "--recon-lr-lut 0: a learning rate must be a finite number > 0"},
		{"--recon-lr-scale", "-1e-3", "--recon-lr-scale -0.001: a learning rate must be"},
		{"--recon-steps", "0", "--recon-steps and --recon-batch must be > 0"},
		{"--recon-rank", "-2", "--recon-rank must not be negative"},
		{"--recon-target", "both", "both"},
	} {
		o, err := run(t, "quantize", "--model", tiny, "--out", filepath.Join(dir, "r"), "--format", "LUT4 per-tensor + pcs",
			"--method", "gptq", "--calib", calib, "--reconstruct", c.flag+"="+c.value)
		if err == nil || !strings.Contains(o, c.want) {
			t.Errorf("%s %s: %v\n%s", c.flag, c.value, err, o)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.work")); !os.IsNotExist(err) {
		t.Errorf("a refused reconstruction left a work directory: %v", err)
	}
	o, err := run(t, "quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "LUT4 per-tensor + pcs", "--lowrank-rank", "32")
	if err != nil || !strings.Contains(o, "low-rank correction: gdn matrices 537.6 KiB → 1.1 MiB (+103%)") {
		t.Errorf("%v:\n%s", err, o)
	}
}
