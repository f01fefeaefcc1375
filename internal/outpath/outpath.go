// Package outpath decides what forge may write where, so that no command
// can destroy a user's files:
//
//   - an output never equals, contains or lies inside an input (Disjoint);
//   - an existing output is replaced only when the caller asked for it
//     (overwrite) and only when forge itself wrote it: a directory carrying
//     forge's marker file (or a bundle manifest) that holds nothing but what
//     forge put there, or an empty directory; a file that is recognisably
//     forge's own output of the same kind (Check, Owned);
//   - forge's working directories (OUT.partial, OUT.work) carry the marker
//     too, and RemoveDir removes a directory only when it is forge's own and
//     no live forge process is writing it;
//   - an output directory is built as OUT.partial and published by one
//     rename (Stage, Staged.Publish).
//
// The marker is a small JSON file, MarkerName, written when forge creates a
// directory and completed with the list of files when the directory is
// published. Errors wrap ErrExists (an output is there and overwrite was
// not asked for) or ErrNotOwned (it is there but forge did not write it),
// so the command line can add its own hint.
package outpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"forge/internal/durable"
)

// MarkerName is the marker file in every directory forge creates.
const MarkerName = ".forge-output.json"

var (
	// ErrExists: the output exists and replacing it was not asked for.
	ErrExists = errors.New("already exists")
	// ErrNotOwned: the output exists but is not something forge wrote.
	ErrNotOwned = errors.New("refusing to replace what forge did not write")
	// ErrOverlap: an output equals, contains or lies inside an input.
	ErrOverlap = errors.New("refusing to write over an input")
)

// Marker is the content of MarkerName.
type Marker struct {
	Kind         string   `json:"kind"` // "bundle", "checkpoint", "quantize-work", "partial", "report"
	ForgeVersion string   `json:"forge_version,omitempty"`
	PID          int      `json:"pid,omitempty"`   // the process writing it, while it is being written
	Files        []string `json:"files,omitempty"` // entries forge wrote, once published
}

// ReadMarker reads dir's marker; ok is false when there is none or it does
// not parse.
func ReadMarker(dir string) (m Marker, ok bool) {
	raw, err := os.ReadFile(filepath.Join(dir, MarkerName))
	if err != nil || json.Unmarshal(raw, &m) != nil || m.Kind == "" {
		return Marker{}, false
	}
	return m, true
}

// WriteMarker writes dir's marker atomically.
func WriteMarker(dir string, m Marker) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, MarkerName), append(raw, '\n'))
}

// MakeDir creates dir (its parent must exist; dir must not) with a marker
// of kind naming this process as its writer.
func MakeDir(dir, kind, version string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return WriteMarker(dir, Marker{Kind: kind, ForgeVersion: version, PID: os.Getpid()})
}

// Seal records the entries of dir (but the marker) as forge's and drops the
// writer's pid: call it on a finished output directory just before it is
// renamed into place.
func Seal(dir, kind, version string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	m := Marker{Kind: kind, ForgeVersion: version}
	for _, e := range ents {
		if e.Name() != MarkerName {
			m.Files = append(m.Files, e.Name())
		}
	}
	return WriteMarker(dir, m)
}

// RemoveDir removes dir if it is forge's own working directory of one of
// kinds (its marker says so) and no other live process is writing it. A
// missing dir is not an error; anything else at dir is refused with
// ErrNotOwned naming what is there.
func RemoveDir(dir string, kinds ...string) error {
	if err := CheckRemovable(dir, kinds...); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// CheckRemovable is RemoveDir's check alone: it returns nil when dir is
// missing, empty, or forge's own working directory of one of kinds that no
// other live process is writing.
func CheckRemovable(dir string, kinds ...string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is a %s, not a directory forge made", ErrNotOwned, dir, describe(st))
	}
	m, ok := ReadMarker(dir)
	if !ok || !slices.Contains(kinds, m.Kind) {
		if empty(dir) {
			return nil
		}
		return fmt.Errorf("%w: %s holds files forge did not write (%s)", ErrNotOwned, dir, sample(dir))
	}
	if m.PID != 0 && m.PID != os.Getpid() && durable.Alive(m.PID) {
		return fmt.Errorf("%s is being written by another forge process (pid %d)", dir, m.PID)
	}
	return nil
}

// Target is an output about to be written.
type Target struct {
	Path string
	Dir  bool // a directory output (else a single file)
	// Owned recognises forge's own earlier output at Path (a file of the
	// same kind, with forge's metadata). For directories it is optional:
	// a directory is forge's when its marker lists every entry, or it is
	// a bundle whose manifest does (see OwnedDir).
	Owned func(path string) bool
}

// Check refuses to write t when something is at t.Path and either
// overwrite is false (ErrExists) or it is not forge's own output of that
// kind (ErrNotOwned); an empty directory may always be replaced by a
// directory output. A missing parent directory is an error too, found
// before any work is done.
func Check(t Target, overwrite bool) error {
	parent := filepath.Dir(filepath.Clean(t.Path))
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: the directory %s does not exist", t.Path, parent)
	}
	st, err := os.Lstat(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case t.Dir && st.IsDir() && empty(t.Path):
		return nil
	case !overwrite:
		return fmt.Errorf("%s: %w", t.Path, ErrExists)
	case t.Dir && !st.IsDir():
		return fmt.Errorf("%w: %s is a %s, not a directory forge wrote", ErrNotOwned, t.Path, describe(st))
	case t.Dir:
		if err := OwnedDir(t.Path, t.Owned); err != nil {
			return err
		}
	case !st.Mode().IsRegular():
		return fmt.Errorf("%w: %s is a %s, not a file forge wrote", ErrNotOwned, t.Path, describe(st))
	case t.Owned != nil && !t.Owned(t.Path):
		return fmt.Errorf("%w: %s is not a file forge wrote of this kind", ErrNotOwned, t.Path)
	}
	return nil
}

// OwnedDir returns nil when dir is a finished forge output: its marker
// lists every entry of dir, or owned (a bundle's manifest check, say)
// accepts it and it holds nothing but what forge writes there.
func OwnedDir(dir string, owned func(string) bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	m, hasMarker := ReadMarker(dir)
	if !hasMarker && (owned == nil || !owned(dir)) {
		return fmt.Errorf("%w: %s holds files forge did not write (%s)", ErrNotOwned, dir, sample(dir))
	}
	if !hasMarker || len(m.Files) == 0 {
		return nil // an older forge output recognised by owned
	}
	for _, e := range ents {
		if e.Name() != MarkerName && !slices.Contains(m.Files, e.Name()) {
			return fmt.Errorf("%w: %s holds %s, which forge did not write", ErrNotOwned, dir, e.Name())
		}
	}
	return nil
}

// ReplaceDir renames the finished directory tmp to out and syncs the
// parent. An existing out (one that Check accepted: a forge output, or an
// empty directory) is swapped with tmp in one atomic exchange
// (renameat2 RENAME_EXCHANGE), so out is at every instant either the old
// output or the new one, and the old one is then removed; where the
// filesystem cannot exchange, the old output is first moved aside.
func ReplaceDir(tmp, out string) error {
	if err := durable.SyncDir(tmp); err != nil {
		return err
	}
	if _, err := os.Lstat(out); err != nil {
		if err := os.Rename(tmp, out); err != nil {
			return err
		}
		return durable.SyncDir(filepath.Dir(out))
	}
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, out, unix.RENAME_EXCHANGE)
	if err == nil {
		if err := durable.SyncDir(filepath.Dir(out)); err != nil {
			return err
		}
		return os.RemoveAll(tmp) // now the old output
	}
	aside := tmp + ".old"
	if err := os.Rename(out, aside); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Rename(aside, out)
		return err
	}
	if err := durable.SyncDir(filepath.Dir(out)); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}

// Disjoint refuses outputs that equal, contain or lie inside an input
// (ErrOverlap, naming both). Paths are compared after making them
// absolute and resolving symbolic links of their existing part, so
// "models/x/../x" and a link to a model directory are caught too. Empty
// paths are ignored.
func Disjoint(outputs, inputs []string) error {
	for _, o := range outputs {
		if o == "" {
			continue
		}
		ro := resolve(o)
		for _, in := range inputs {
			if in == "" {
				continue
			}
			ri := resolve(in)
			switch {
			case ro == ri:
				return fmt.Errorf("%w: output %s is the input %s", ErrOverlap, o, in)
			case within(ro, ri):
				return fmt.Errorf("%w: output %s lies inside the input %s", ErrOverlap, o, in)
			case within(ri, ro):
				return fmt.Errorf("%w: output %s contains the input %s", ErrOverlap, o, in)
			}
		}
	}
	return nil
}

// resolve makes p absolute and resolves links in its longest existing
// prefix.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether p lies strictly inside dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func empty(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) == 0
}

// sample names up to three entries of dir.
func sample(dir string) string {
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if len(names) == 3 {
			names = append(names, "…")
			break
		}
		names = append(names, e.Name())
	}
	return strings.Join(names, ", ")
}

func describe(st fs.FileInfo) string {
	switch m := st.Mode(); {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}
