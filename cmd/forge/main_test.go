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
	if v.Params != 8_419_592 || v.Layers != 8 || len(v.Parts) != 6 {
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
		out, err := run(t, append([]string{"logits", "--model", tiny, "--tokens", tok, "--out", filepath.Join(dir, "o.safetensors")}, mode...)...)
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
		{"snr bad regexp", []string{"snr", "--model", tiny, "--tensors", "(", "--formats", "LUT4 per-tensor + pcs"}, "--tensors"},
		{"snr no match", []string{"snr", "--model", tiny, "--tensors", "nothing", "--formats", "LUT4 per-tensor + pcs"}, "no matrix"},
		{"snr both sources", []string{"snr", "--model", tiny, "--gaussian", "8x8", "--formats", "LUT4 per-tensor + pcs"}, "--gaussian"},
		{"quantize bad format", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "vector 2x17 + pcs"}, "2x17"},
		{"quantize bad method", []string{"quantize", "--model", tiny, "--out", filepath.Join(dir, "q"), "--format", "bf16", "--method", "gptq"}, "gptq"},
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
