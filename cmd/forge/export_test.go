package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"forge/safetensors"
)

// TestExportImport runs quantize → export → import → logits as a user
// would: the export warns about the rotation's sign generator, import
// finds the checkpoint through forge-export.json, inspect shows the
// imported rotations (forge's signs), and the imported bundle's logits (decode mode too) are byte-identical to the quantized
// bundle's.
func TestExportImport(t *testing.T) {
	dir := t.TempDir()
	b, ref, back := filepath.Join(dir, "bundle"), filepath.Join(dir, "ref"), filepath.Join(dir, "back")
	if out, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT4 per-tensor + pcs", "--hadamard"); err != nil {
		t.Fatal(err, out)
	}
	cmd := exec.Command(forgeBin, "export", "--model", b, "--layout", "reference", "--out", ref)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "wrote "+ref+": 17 files") || !strings.Contains(stderr.String(), "forge-pcg-v1") {
		t.Fatalf("export: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	for _, f := range []string{"layer_00.safetensors", "layer_07_mixer.safetensors", "lm_head.safetensors", "forge-export.json"} {
		if _, err := os.Stat(filepath.Join(ref, f)); err != nil {
			t.Error(err)
		}
	}
	if out, err := run(t, "import", ref, "--out", back); err != nil || !strings.Contains(out, "wrote "+back+": 51 matrices") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := run(t, "inspect", back); err != nil || !strings.Contains(out, "hadamard seed 1003 block 256") || strings.Contains(out, "numpy") {
		t.Errorf("inspect: the rotation with forge's signs is not shown: %v\n%s", err, out)
	}
	toks := filepath.Join(dir, "t.json")
	os.WriteFile(toks, []byte(`[[1116, 2239, 275, 1030, 11, 264], [42, 7]]`), 0o644)
	for _, mode := range [][]string{nil, {"--decode"}} {
		var logits [2][]byte
		for i, m := range []string{b, back} {
			lf := filepath.Join(dir, "l.safetensors")
			if out, err := run(t, append([]string{"logits", "--model", m, "--tokens", toks, "--out", lf, "--overwrite"}, mode...)...); err != nil {
				t.Fatal(err, out)
			}
			f, err := safetensors.Open(lf)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"logits_0", "logits_1"} {
				data, err := f.Bytes(n)
				if err != nil {
					t.Fatal(err)
				}
				logits[i] = append(logits[i], data...)
			}
			f.Close()
		}
		if len(logits[0]) == 0 || !bytes.Equal(logits[0], logits[1]) {
			t.Errorf("%v: the imported bundle's logits differ from the bundle's", mode)
		}
	}
}

// TestExportImportErrors: bad inputs and existing outputs are clear errors.
func TestExportImportErrors(t *testing.T) {
	dir := t.TempDir()
	b, ref := filepath.Join(dir, "bundle"), filepath.Join(dir, "ref")
	if out, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT4 g64 + pcs"); err != nil {
		t.Fatal(err, out)
	}
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o644)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"grouped", []string{"export", b, "--out", ref}, []string{`matrix "layers.0.linear_attn.in_proj_qkv.weight"`, "row-grouped"}},
		{"checkpoint", []string{"export", tiny, "--out", ref}, []string{"not a forge bundle"}},
		{"layout", []string{"export", b, "--layout", "coreml", "--out", ref}, []string{"--layout"}},
		{"not mine", []string{"export", b, "--out", mine, "--overwrite"}, []string{"did not write"}},
		{"missing dir", []string{"import", filepath.Join(dir, "nope"), "--out", filepath.Join(dir, "x")}, []string{"does not exist"}},
		{"no base", []string{"import", mine, "--out", filepath.Join(dir, "x")}, []string{"--base"}},
		{"not a layout", []string{"import", mine, "--base", tiny, "--out", filepath.Join(dir, "x")}, []string{"no layer_00.safetensors"}},
	}
	for _, c := range cases {
		out, err := run(t, c.args...)
		if err == nil {
			t.Errorf("%s: no error\n%s", c.name, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output does not say %q:\n%s", c.name, w, out)
			}
		}
	}
	if _, err := os.Stat(ref); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s", ref)
	}
}
