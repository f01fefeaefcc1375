package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempTag marks forge's temporary files and directories: a temporary for
// path is named path + tempTag + "<pid>-<random>", in path's directory, so
// that a later run can tell its own leftovers (the process is gone) from a
// temporary another forge process is still writing.
const tempTag = ".forge-tmp-"

// CreateTemp creates a temporary file for path in path's directory (mode
// 0600; the caller renames it over path when complete). Leftover
// temporaries of path from forge processes that no longer run are removed
// first (CleanStale). Something at path that is not a regular file (a
// device such as /dev/null, a directory, a link, a pipe) is refused: the
// rename would replace it.
func CreateTemp(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v): refusing to replace it", path, st.Mode().Type())
	}
	CleanStale(path)
	return os.CreateTemp(filepath.Dir(path), tempPattern(path))
}

func tempPattern(path string) string {
	return filepath.Base(filepath.Clean(path)) + tempTag + strconv.Itoa(os.Getpid()) + "-*"
}

// CleanStale removes the temporaries of path left by forge processes that
// were killed before they could remove them (SIGKILL, power loss), and
// returns their names. A temporary whose process still runs is left alone.
// Errors are ignored: a leftover that cannot be removed costs disk space,
// not correctness.
func CleanStale(path string) []string {
	base := filepath.Base(filepath.Clean(path))
	dir := filepath.Dir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base+tempTag)
		if !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || Alive(pid) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// Alive reports whether a process with this pid exists (signal 0). A
// process of another user counts as alive (EPERM).
func Alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
