package durable

import (
	"errors"
	"io/fs"
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

// TestNeverReplacesSpecialFiles: a write aimed at a device, a directory or
// a link is refused and leaves it as it was (a rename over /dev/null once
// turned it into a regular file on this machine).
func TestNeverReplacesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "target"), link)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, p := range []string{os.DevNull, link, sub} {
		before, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(p, []byte("x")); err == nil {
			t.Errorf("WriteFile(%s) succeeded", p)
		}
		after, err := os.Lstat(p)
		if err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s changed from %v to %v (%v)", p, before.Mode(), after.Mode(), err)
		}
	}
}

// TestWriteNew: WriteNew creates a file that does not exist, refuses one
// that does (fs.ErrExist) and leaves it as it was, with no temporary file
// left behind.
func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.json")
	if err := WriteNew(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(p, []byte("two"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("the record was overwritten: %q", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("files left: %v", es)
	}
}
