// Package budget refuses work that cannot fit: a request for more memory
// than the machine has available, or a file larger than the free space of
// its filesystem, is a clear error before anything is allocated or
// written, instead of an out-of-memory crash or a full disk halfway.
package budget

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"forge/internal/units"
)

// ErrTooLarge is wrapped by every refusal.
var ErrTooLarge = errors.New("too large for this machine")

// Memory refuses need bytes of memory for what when they exceed the memory
// available now (MemAvailable of /proc/meminfo, which counts reclaimable
// page cache). Where that cannot be read, nothing is refused.
func Memory(what string, need int64) error {
	avail, ok := available()
	if !ok || need <= avail {
		return nil
	}
	return fmt.Errorf("%s needs %s of memory, %s is available: %w", what, units.Bytes(need), units.Bytes(avail), ErrTooLarge)
}

// available reads MemAvailable in bytes.
func available() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// Disk refuses writing need bytes at path (a file or directory to be
// created) for what when its filesystem has less free space (for an
// unprivileged user). The nearest existing ancestor of path is asked.
func Disk(path, what string, need int64) error {
	dir := filepath.Dir(filepath.Clean(path))
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if need <= free {
		return nil
	}
	return fmt.Errorf("%s would write %s to %s, whose filesystem has %s free: %w", what, units.Bytes(need), dir, units.Bytes(free), ErrTooLarge)
}

// Limits on small files forge reads whole: far above any real one, so
// that a hostile or mistaken path (a device, a multi-gigabyte file named
// config.json) is refused instead of read into memory.
const (
	MaxConfigFile   = 16 << 20  // config.json, plans, tokenizer_config.json
	MaxManifestFile = 256 << 20 // forge.json, model.safetensors.index.json
)

// ReadFile reads path whole if it is a regular file of at most limit
// bytes; anything else is an error naming the file.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %s, more than the %s such a file may have: %w", path, units.Bytes(st.Size()), units.Bytes(limit), ErrTooLarge)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}
