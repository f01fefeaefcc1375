package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEditedRotationSeed (issue 10): a hand edit of one matrix's rotation
// seed in forge.json used to open and run with exit 0 and wrong logits.
// Now `forge inspect` and `forge logits` exit non-zero, naming the matrix,
// the field and both values; the unedited bundle runs.
func TestEditedRotationSeed(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "b")
	if out, err := run(t, "quantize", "--model", tiny, "--out", b, "--format", "LUT2 per-tensor + pcs", "--hadamard"); err != nil {
		t.Fatal(err, out)
	}
	tok := filepath.Join(dir, "tokens.json")
	os.WriteFile(tok, []byte(`[1116, 2239, 275, 1030]`), 0o644)
	logits := []string{"logits", "--model", b, "--tokens", tok, "--out", filepath.Join(dir, "o.safetensors"), "--overwrite"}
	if out, err := run(t, logits...); err != nil {
		t.Fatal("unedited bundle: ", err, out)
	}

	// Edit as a person would: the seed line inside up_proj's entry of layer 3.
	man := filepath.Join(b, "forge.json")
	raw, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	at := strings.Index(text, `"name": "layers.3.mlp.up_proj.weight"`)
	seed := strings.Index(text[at:], `"seed": 1003`)
	if at < 0 || seed < 0 {
		t.Fatalf("forge.json has no layers.3.mlp.up_proj.weight with rotation seed 1003:\n%s", text)
	}
	seed += at
	text = text[:seed] + `"seed": 1004` + text[seed+len(`"seed": 1003`):]
	os.WriteFile(man, []byte(text), 0o644)

	want := `forge.json: matrix "layers.3.mlp.up_proj.weight": rotation seed 1004, the shard model-00001-of-00001.safetensors says 1003`
	for _, args := range [][]string{{"inspect", b}, logits} {
		out, err := run(t, args...)
		if err == nil {
			t.Errorf("forge %s exited 0 on the edited bundle:\n%s", args[0], out)
		} else if !strings.Contains(out, want) {
			t.Errorf("forge %s: output does not name the field:\n%s", args[0], out)
		}
	}
}
