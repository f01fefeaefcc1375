package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/lut"
)

// TestAnnotate: an annotation lands in the recipe, the bundle still opens
// and verifies (content hash refreshed), a key is never set twice, and an
// edited manifest is not annotated.
func TestAnnotate(t *testing.T) {
	f, err := lut.ParseFormat("INT8 per-channel")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b")
	if err := export(t, out, f, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Annotate(out, "gate", map[string]any{"passed": true, "kl": 0.01}); err != nil {
		t.Fatal(err)
	}
	b, err := Open(out) // checks the content hash
	if err != nil {
		t.Fatalf("annotated bundle: %v", err)
	}
	g, ok := b.Manifest().Quant.Recipe["gate"].(map[string]any)
	b.Close()
	if !ok || g["passed"] != true || g["kl"] != 0.01 {
		t.Errorf("recipe gate = %v", g)
	}
	if err := Annotate(out, "gate", 1); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("second annotation: %v", err)
	}
	p := filepath.Join(out, ManifestName)
	raw, _ := os.ReadFile(p)
	edited := strings.Replace(string(raw), `"method": "`, `"method": "x`, 1)
	os.WriteFile(p, []byte(edited), 0o644)
	if err := Annotate(out, "other", 1); err == nil || !strings.Contains(err.Error(), "content_sha256") {
		t.Errorf("edited manifest: %v", err)
	}
}
