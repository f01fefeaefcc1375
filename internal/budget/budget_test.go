package budget

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestMemory(t *testing.T) {
	if err := Memory("a small buffer", 1<<20); err != nil {
		t.Errorf("1 MiB refused: %v", err)
	}
	if err := Memory("a 100000x100000 matrix", 1<<50); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1 PiB accepted: %v", err)
	}
}

func TestDisk(t *testing.T) {
	dir := t.TempDir()
	if err := Disk(filepath.Join(dir, "a", "b", "f"), "a file", 1<<10); err != nil {
		t.Errorf("1 KiB refused: %v", err)
	}
	if err := Disk(filepath.Join(dir, "f"), "a file", 1<<60); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1 EiB accepted: %v", err)
	}
}
