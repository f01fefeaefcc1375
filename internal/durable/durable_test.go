package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, body := range []string{"first", "second, longer"} {
		if err := WriteFile(p, []byte(body)); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != body {
			t.Errorf("got %q, want %q", got, body)
		}
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteFileFails: a destination whose directory is missing is an error
// and creates nothing.
func TestWriteFileFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFile(p, []byte("x")); err == nil {
		t.Fatal("wrote into a missing directory")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("%s exists", p)
	}
}
