package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI tests build the real binary and run it as a user would.

var forgeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "forge-cli-")
	if err != nil {
		panic(err)
	}
	forgeBin = filepath.Join(dir, "forge")
	if out, err := exec.Command("go", "build", "-o", forgeBin, ".").CombinedOutput(); err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(forgeBin, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var tiny = filepath.Join("..", "..", "models", "forge-tiny")

func TestInspectJSON(t *testing.T) {
	out, err := run(t, "inspect", "--json", tiny)
	if err != nil {
		t.Fatal(err, out)
	}
	var v struct {
		Params int64 `json:"params"`
		Layers int   `json:"layers"`
		Parts  []struct {
			Part   string `json:"part"`
			Params int64  `json:"params"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err, out)
	}
	if v.Params != 8_419_592 || v.Layers != 8 || len(v.Parts) != 7 || v.Parts[2].Part != "gdn" || v.Parts[2].Params != 1_099_776 {
		t.Errorf("%+v", v)
	}
	table, err := run(t, "inspect", tiny)
	if err != nil || !strings.Contains(table, "LLLALLLA") || !strings.Contains(table, "8419592") {
		t.Errorf("table:\n%s", table)
	}
}

// TestTokenizeThenLogits: the README's pipeline, tokenize → logits, in
// both modes, gives the same most likely next token.
func TestTokenizeThenLogits(t *testing.T) {
	dir := t.TempDir()
	ids, err := run(t, "tokenize", "--model", tiny, "package main\n\nimport (\n\t\"fmt\"\n)\n\nfunc main() {\n\tfmt.")
	if err != nil {
		t.Fatal(err, ids)
	}
	tok := filepath.Join(dir, "tokens.json")
	os.WriteFile(tok, []byte(ids), 0o644)
	var lines []string
	for _, mode := range [][]string{nil, {"--decode"}} {
		out, err := run(t, append([]string{"logits", "--model", tiny, "--tokens", tok, "--out", filepath.Join(dir, "o.safetensors"), "--overwrite"}, mode...)...)
		if err != nil {
			t.Fatal(err, out)
		}
		i := strings.Index(out, "most likely next token")
		if i < 0 {
			t.Fatalf("no summary in %q", out)
		}
		lines = append(lines, out[i:])
	}
	if lines[0][:30] != lines[1][:30] {
		t.Errorf("prefill and decode disagree: %q vs %q", lines[0], lines[1])
	}
}

// TestErrors: bad input exits non-zero with a message naming the problem.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[1, "x"]`), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"not a checkpoint", []string{"inspect", dir}, "config.json"},
		{"bad tokens", []string{"logits", "--model", tiny, "--tokens", bad, "--out", filepath.Join(dir, "o")}, "bad.json"},
		{"unknown command", []string{"frobnicate"}, "unexpected argument"},
		{"snr bad shape", []string{"snr", "--gaussian", "4096by4096", "--formats", "LUT4 per-tensor + pcs"}, "ROWSxCOLS"},
		{"snr bad format", []string{"snr", "--gaussian", "64x64", "--formats", "LUT5 per-tensor + pcs"}, "LUT5"},
		{"snr bad regexp", []string{"snr", "--model", tiny, "--tensors", "(", "--formats", "LUT4 per-tensor + pcs"}, "tensor pattern"},
		{"snr no match", []string{"snr", "--model", tiny, "--tensors", "nothing", "--formats", "LUT4 per-tensor + pcs"}, "no matrix"},
		{"snr both sources", []string{"snr", "--model", tiny, "--gaussian", "8x8", "--formats", "LUT4 per-tensor + pcs"}, "--gaussian"},
		{"quantize bad format", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "vector 2x17 + pcs"}, "2x17"},
		{"quantize bad method", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--method", "awq"}, "awq"},
		{"gptq without calib", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--method", "gptq"}, "needs calibration data"},
		{"bad calib spec", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--method", "gptq", "--calib", "x.txt:0"}, "x.txt:0"},
		{"missing calib file", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--aw", "--calib", filepath.Join(dir, "none.txt:4")}, "none.txt"},
		{"lowrank parts without rank", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--lowrank-parts", "gdn"}, "without a low-rank rank"},
		{"missing plan", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--plan", filepath.Join(dir, "p.json")}, "p.json"},
		{"ablation without reference", []string{"eval", "ablation", "--trace", bad, "--model", tiny, "--parts", "mlp"}, "--reference"},
		{"ablation bad part", []string{"eval", "ablation", "--trace", bad, "--model", tiny, "--reference", tiny, "--parts", "ffn"}, "ffn"},
		{"lcpp with ablation", []string{"eval", "lcpp", "--trace", bad, "--model", tiny, "--reference", tiny}, "unknown flag --reference"},
		{"llamacpp without lcpp", []string{"trace", "--model", tiny, "--data", bad, "--out", filepath.Join(dir, "t"), "--llamacpp"}, "unknown flag --llamacpp"},
		{"lcpp too short", []string{"trace", "lcpp", "--model", tiny, "--data", bad, "--out", filepath.Join(dir, "t")}, "too few tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err == nil {
				t.Fatalf("exit 0: %s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output %q does not mention %q", out, c.want)
			}
		})
	}
}

// TestSNRJSON: `forge snr --json` prints objects with tensor, format, bpw
// and snr_db.
func TestSNRJSON(t *testing.T) {
	for _, args := range [][]string{
		{"snr", "--gaussian", "256x256", "--formats", "LUT4 per-tensor + pcs,INT8 per-channel", "--json"},
		{"snr", "--model", tiny, "--tensors", `layers\.0\.mlp`, "--formats", "LUT2 per-tensor + pcs", "--json"},
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatal(err, out)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &rows); err != nil {
			t.Fatal(err, out)
		}
		if len(rows) < 2 {
			t.Fatalf("%d rows", len(rows))
		}
		for _, r := range rows {
			for _, k := range []string{"tensor", "format", "bpw", "snr_db"} {
				if _, ok := r[k]; !ok {
					t.Errorf("row %v lacks %s", r, k)
				}
			}
		}
	}
}

// TestTraceEval: `forge trace` then `forge eval` of the reference against
// its own trace (KL 0, top-1 100%) with every output file, and the
// refusals a user meets: another vocabulary, a cut trace.
func TestTraceEval(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "ref.trace")
	data := filepath.Join("..", "..", "testdata", "calib", "code.txt")
	out, err := run(t, "trace", "--model", tiny, "--data", data+":3", "--ctx", "64", "--out", trace)
	if err != nil || !strings.Contains(out, "189 positions") || !strings.Contains(out, "full") {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	js, kl, md := filepath.Join(dir, "r.json"), filepath.Join(dir, "kl.npy"), filepath.Join(dir, "r.md")
	out, err = run(t, "eval", "--trace", trace, "--model", tiny, "--json", js, "--kl-out", kl, "--markdown", md)
	if err != nil || !strings.Contains(out, "100.00%") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	var rep struct {
		N      int     `json:"n_positions"`
		MeanKL float64 `json:"mean_kl"`
		Top1   float64 `json:"top1"`
		BPW    float64 `json:"bpw"`
		Def    string  `json:"definition"`
	}
	raw, _ := os.ReadFile(js)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err, string(raw))
	}
	if rep.N != 189 || rep.MeanKL != 0 || rep.Top1 != 1 || rep.BPW != 16 || rep.Def != "full" {
		t.Errorf("report %+v", rep)
	}
	// NPY 1.0: 10 bytes + header, then 189 float32s.
	if b, _ := os.ReadFile(kl); len(b) < 10 || len(b)-10-int(b[8])-int(b[9])<<8 != 4*189 {
		t.Errorf("kl.npy of %d bytes", len(b))
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "| top-1 agreement | 100.00% |") {
		t.Errorf("markdown:\n%s", b)
	}
	raw, _ = os.ReadFile(trace)
	cut := filepath.Join(dir, "cut.trace")
	os.WriteFile(cut, raw[:len(raw)-4096], 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--trace", trace, "--model", filepath.Join("..", "..", "testdata", "qwen35-tiny-random")}, "vocabulary"},
		{[]string{"eval", "--trace", cut, "--model", tiny}, "cut.trace"},
		{[]string{"trace", "--model", tiny, "--data", data + ":3", "--ctx", "8", "--topk", "9999", "--out", trace + "2"}, "top-K"},
		{[]string{"trace", "--model", tiny, "--data", data + ":3", "--ctx", "8", "--out", trace}, "already exists"},
	} {
		if out, err := run(t, c.args...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v, output %q lacks %q", c.args, err, out, c.want)
		}
	}
}
