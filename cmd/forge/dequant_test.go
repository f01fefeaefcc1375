package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDequantizeThenPPL runs quantize → dequantize → ppl as a user would:
// the bundle and its f32 checkpoint have the same perplexity (their logits
// differ by float32 rounding only, ~1e-5, so the mean NLL agrees to 1e-5
// relative), and the source model's is different.
func TestDequantizeThenPPL(t *testing.T) {
	dir := t.TempDir()
	b, ck := filepath.Join(dir, "bundle"), filepath.Join(dir, "ck")
	if out, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT4 per-tensor + pcs", "--hadamard"); err != nil {
		t.Fatal(err, out)
	}
	out, err := run(t, "dequantize", b, "--out", ck, "--dtype", "f32")
	if err != nil || !strings.Contains(out, "wrote "+ck) {
		t.Fatal(err, out)
	}
	if _, err := os.Stat(filepath.Join(ck, "model.safetensors")); err != nil {
		t.Error(err)
	}
	if out, err := run(t, "dequantize", b, "--out", ck); err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("an existing output: %v\n%s", err, out)
	}
	data := filepath.Join("..", "..", "testdata", "calib", "prose.txt") + ":4"
	nll := map[string]float64{}
	for _, m := range []string{tiny, b, ck} {
		out, err := exec.Command(forgeBin, "ppl", "--model", m, "--data", data, "--ctx", "32", "--json").Output() // stdout only: progress goes to stderr
		if err != nil {
			t.Fatal(err, string(out))
		}
		var rep struct {
			Scored  int     `json:"tokens_scored"`
			MeanNLL float64 `json:"mean_nll"`
			PPL     float64 `json:"ppl"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatal(err, string(out))
		}
		if rep.Scored != 4*31 || math.Abs(rep.PPL-math.Exp(rep.MeanNLL)) > 1e-9*rep.PPL {
			t.Errorf("%s: %+v", m, rep)
		}
		nll[m] = rep.MeanNLL
	}
	t.Logf("mean NLL: source %.8f, bundle %.8f, f32 checkpoint %.8f", nll[tiny], nll[b], nll[ck])
	if d := math.Abs(nll[b] - nll[ck]); d > 1e-5*nll[b] {
		t.Errorf("mean NLL: bundle %.8f, its f32 checkpoint %.8f", nll[b], nll[ck])
	}
	if nll[b] == nll[tiny] {
		t.Errorf("the bundle's mean NLL equals the source's (%.8f)", nll[b])
	}
	table, err := run(t, "ppl", "--model", ck, "--data", data, "--ctx", "32")
	if err != nil || !strings.Contains(table, "perplexity") || !strings.Contains(table, "tokens/s") {
		t.Errorf("table: %v\n%s", err, table)
	}
}

// TestDequantizePPLErrors: bad inputs are clear errors.
func TestDequantizePPLErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("Too short.\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing bundle", []string{"dequantize", filepath.Join(dir, "nope"), "--out", filepath.Join(dir, "o")}, "does not exist"},
		{"checkpoint as bundle", []string{"dequantize", tiny, "--out", filepath.Join(dir, "o")}, "not a forge bundle"},
		{"bad dtype", []string{"dequantize", tiny, "--out", filepath.Join(dir, "o"), "--dtype", "f8"}, "dtype"},
		{"bad shard size", []string{"dequantize", tiny, "--out", filepath.Join(dir, "o"), "--shard-size", "4XB"}, "4XB"},
		{"ppl short text", []string{"ppl", "--model", tiny, "--data", short, "--ctx", "64"}, "too short"},
		{"ppl ctx 1", []string{"ppl", "--model", tiny, "--data", short, "--ctx", "1"}, "at least 2"},
		{"ppl ctx 0", []string{"ppl", "--model", tiny, "--data", short, "--ctx", "0"}, "--ctx 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Fatalf("err %v, output %q, want it to mention %q", err, out, c.want)
			}
		})
	}
}
