package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNumerics runs forge numerics on forge-tiny as a user would: the
// table, the JSON fields the issue names, the figure, and the refusals.
func TestNumerics(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "ref.trace")
	data := filepath.Join("..", "..", "testdata", "calib", "code.txt")
	if out, err := run(t, "trace", "--model", tiny, "--data", data+":2", "--ctx", "48", "--out", trace); err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	js, plot := filepath.Join(dir, "num.json"), filepath.Join(dir, "num")
	out, err := run(t, "numerics", "--model", tiny, "--trace", trace, "--rows", "2", "--json", js, "--plot", plot)
	if err != nil {
		t.Fatalf("numerics: %v\n%s", err, out)
	}
	for _, want := range []string{"share of update", "rel L2 (isolated)", "tanh-silu+stable-softplus+gdn-scale", "none *", "gdn_"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Selected string `json:"selected"`
		Layers   []struct {
			RelL2     *float64 `json:"rel_l2"`
			Cosine    *float64 `json:"cosine"`
			Overflow  *int64   `json:"overflow"`
			Subnormal *float64 `json:"subnormal_frac"`
		} `json:"layers"`
		EndToEnd struct {
			MeanKL *float64 `json:"mean_kl"`
			Top1   *float64 `json:"top1"`
		} `json:"end_to_end"`
		Configs []struct {
			Label string `json:"label"`
		} `json:"configs"`
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Selected != "none" || len(rep.Layers) != 8 || len(rep.Configs) != 5 || rep.EndToEnd.MeanKL == nil || rep.EndToEnd.Top1 == nil {
		t.Fatalf("report: selected %q, %d layers, %d configs, end to end %+v", rep.Selected, len(rep.Layers), len(rep.Configs), rep.EndToEnd)
	}
	for i, l := range rep.Layers {
		if l.RelL2 == nil || l.Cosine == nil || l.Overflow == nil || l.Subnormal == nil || *l.RelL2 <= 0 || *l.RelL2 > 0.05 {
			t.Errorf("layer %d: %+v", i, l)
		}
	}
	for _, f := range []string{plot + ".png", plot + ".svg"} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("figure %s: %v", f, err)
		}
	}
	// Again without --overwrite: refused; with it, only the asked emulation.
	if out, err := run(t, "numerics", "--model", tiny, "--trace", trace, "--rows", "1", "--json", js); err == nil || !strings.Contains(out, js) {
		t.Errorf("an existing report was replaced without --overwrite: %v\n%s", err, out)
	}
	out, err = run(t, "numerics", "--model", tiny, "--trace", trace, "--rows", "1", "--tokens", "24", "--fix", "gdn-scale,tanh-silu,stable-softplus",
		"--only", "--json", js, "--overwrite")
	if err != nil || !strings.Contains(out, "tanh-silu+stable-softplus+gdn-scale *") || strings.Contains(out, "\nnone") {
		t.Errorf("--only --fix: %v\n%s", err, out)
	}
}

// TestNumericsBadInput: bad flags and files get clear errors, never a
// panic, and a file forge did not write is never replaced.
func TestNumericsBadInput(t *testing.T) {
	dir := t.TempDir()
	notTrace := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTrace, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine.json")
	if err := os.WriteFile(mine, []byte(`{"mine": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--trace", notTrace, "--fix", "fast-silu"}, `fix "fast-silu"`},
		{[]string{"--trace", notTrace, "--rows", "0"}, "--rows"},
		{[]string{"--trace", notTrace}, "notes.txt"},
		{[]string{"--trace", notTrace, "--json", mine}, "mine.json"},
	}
	for _, c := range cases {
		out, err := run(t, append([]string{"numerics", "--model", tiny}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) || strings.Contains(out, "panic") {
			t.Errorf("numerics %v: %v\n%s", c.args, err, out)
		}
	}
	if b, _ := os.ReadFile(mine); string(b) != `{"mine": true}` {
		t.Errorf("a file forge did not write was changed: %s", b)
	}
}
