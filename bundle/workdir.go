package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/safetensors"
)

// WorkKind is the marker kind (internal/outpath) of a work directory.
const WorkKind = "quantize-work"

// Metadata keys of a work file.
const (
	workFacts = "forge.work.facts"  // the matrix's Facts (JSON)
	workSNR   = "forge.work.snr"    // its SNREntry (JSON), when it has one
	workSum   = "forge.work.sha256" // workSum of the other keys and the arrays
)

// WorkDir is a bundle in progress: the matrices a quantize run has
// finished, kept in OUT.work one file per matrix until the bundle OUT is
// written from them, so that an interrupted run resumes and the bundle is
// assembled without holding every matrix in memory.
//
// The directory holds forge's marker (internal/outpath, kind WorkKind, so
// that a run only ever removes its own work directory), recipe.json, the
// run's settings (a resume with other settings is refused), and
// NAME.safetensors for each finished matrix NAME, written
// atomically: its arrays under their bundle tensor names, dtypes and
// shapes (EncodeMatrix), and in its metadata the matrix's facts, its
// held-out SNRs and a SHA-256 over both and the arrays, checked when the
// file is loaded, so that a damaged file is never baked into a bundle.
type WorkDir struct {
	dir     string
	damaged func(path string, err error)
	files   []*safetensors.File
}

// WorkOptions configures OpenWork. The zero value starts afresh.
type WorkOptions struct {
	// Resume keeps a work directory made with the same identity (and
	// refuses one made with another) instead of starting empty.
	Resume bool
	// ForgeVersion is recorded in the directory's marker.
	ForgeVersion string
	// Damaged, if set, hears of each stored matrix that failed its checks
	// (err says how) and was removed, to be made again.
	Damaged func(path string, err error)
}

// WorkPath is the work directory of the bundle out: out + ".work".
func WorkPath(out string) string { return filepath.Clean(out) + ".work" }

// OpenWork prepares WorkPath(out) for a run whose settings are identity
// (compared byte for byte on resume; recipe.json). Without opt.Resume it
// starts empty. A directory there that forge did not make, or that
// another live forge process is writing, is refused.
func OpenWork(out string, identity []byte, opt WorkOptions) (*WorkDir, error) {
	dir := WorkPath(out)
	wd := &WorkDir{dir: dir, damaged: opt.Damaged}
	rp := filepath.Join(dir, "recipe.json")
	if opt.Resume {
		old, err := os.ReadFile(rp)
		switch {
		case err == nil && string(old) != string(identity):
			return nil, fmt.Errorf("resume: %s was made with other settings:\n  then: %s\n  now:  %s", dir, old, identity)
		case err == nil:
			m, _ := outpath.ReadMarker(dir)
			if m.PID != 0 && m.PID != os.Getpid() && durable.Alive(m.PID) {
				return nil, fmt.Errorf("%s is being written by another forge process (pid %d)", dir, m.PID)
			}
			if err := outpath.WriteMarker(dir, outpath.Marker{Kind: WorkKind, ForgeVersion: opt.ForgeVersion, PID: os.Getpid()}); err != nil {
				return nil, err
			}
			return wd, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	if err := outpath.RemoveDir(dir, WorkKind); err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if err := outpath.MakeDir(dir, WorkKind, opt.ForgeVersion); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(rp, identity); err != nil {
		return nil, err
	}
	return wd, nil
}

// Dir returns the work directory.
func (wd *WorkDir) Dir() string { return wd.dir }

// Stored counts the matrices in the work directory.
func (wd *WorkDir) Stored() int {
	m, _ := filepath.Glob(filepath.Join(wd.dir, "*.safetensors"))
	return len(m)
}

// Size is the bytes the work directory holds.
func (wd *WorkDir) Size() int64 {
	var n int64
	filepath.WalkDir(wd.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func (wd *WorkDir) path(name string) string { return filepath.Join(wd.dir, name+".safetensors") }

// workSumOf is the SHA-256 (hex) of a work file: every metadata key but
// workSum with its value, in key order, then each array's name, length and
// bytes, in name order.
func workSumOf(meta map[string]string, names []string, arrays [][]byte) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if k != workSum {
			fmt.Fprintf(h, "%s\x00%d\x00%s\x00", k, len(meta[k]), meta[k])
		}
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range order {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", names[i], len(arrays[i]))
		h.Write(arrays[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Save stores m (and its held-out SNRs, if any) as the matrix name,
// atomically.
func (wd *WorkDir) Save(name string, m *lut.Matrix, snr *SNREntry) error {
	facts, ts, err := EncodeMatrix(name, m)
	if err != nil {
		return fmt.Errorf("work %s: %w", wd.dir, err)
	}
	meta := map[string]string{workFacts: facts.encode()}
	if snr != nil {
		raw, err := json.Marshal(snr)
		if err != nil {
			return fmt.Errorf("work %s: matrix %q: SNRs: %w", wd.dir, name, err)
		}
		meta[workSNR] = string(raw)
	}
	names, arrays := make([]string, len(ts)), make([][]byte, len(ts))
	for i, t := range ts {
		names[i], arrays[i] = t.Name, t.Data
	}
	meta[workSum] = workSumOf(meta, names, arrays)
	return safetensors.WriteFile(wd.path(name), ts, meta)
}

// Load returns the stored matrix name, its arrays mapped from the file
// (which stays open until Close), and its SNRs; ok = false if it is not
// stored. A stored file that does not open, fails its SHA-256 or lacks
// its facts (made by an older forge) is removed and reported to
// WorkOptions.Damaged: the matrix is made again.
func (wd *WorkDir) Load(name string) (m *lut.Matrix, snr *SNREntry, ok bool, err error) {
	path := wd.path(name)
	f, err := safetensors.Open(path)
	if err == nil {
		if err = checkWorkFile(f); err != nil {
			f.Close()
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		if rmErr := os.Remove(path); rmErr != nil {
			return nil, nil, false, fmt.Errorf("work %s: %w (and it cannot be removed: %v)", wd.dir, err, rmErr)
		}
		if wd.damaged != nil {
			wd.damaged(path, err)
		}
		return nil, nil, false, nil
	}
	wd.files = append(wd.files, f)
	meta := f.Metadata()
	facts, err := decodeFacts(meta[workFacts])
	if err != nil {
		return nil, nil, false, fmt.Errorf("work %s: facts: %w", f.Path(), err)
	}
	if raw, has := meta[workSNR]; has {
		snr = new(SNREntry)
		if err := json.Unmarshal([]byte(raw), snr); err != nil {
			return nil, nil, false, fmt.Errorf("work %s: SNRs: %w", f.Path(), err)
		}
	}
	if m, err = DecodeMatrix(name, facts, f); err != nil {
		return nil, nil, false, fmt.Errorf("work %s: %w", f.Path(), err)
	}
	return m, snr, true, nil
}

// checkWorkFile verifies a work file against the SHA-256 in its metadata.
func checkWorkFile(f *safetensors.File) error {
	meta := f.Metadata()
	want, ok := meta[workSum]
	if _, facts := meta[workFacts]; !ok || !facts {
		return fmt.Errorf("%s: no %s or %s (made by an older forge, or damaged)", f.Path(), workFacts, workSum)
	}
	names := f.Names()
	arrays := make([][]byte, len(names))
	for i, k := range names {
		b, err := f.Bytes(k)
		if err != nil {
			return err
		}
		arrays[i] = b
	}
	if got := workSumOf(meta, names, arrays); got != want {
		return fmt.Errorf("%s: SHA-256 %s, recorded %s: damaged", f.Path(), got, want)
	}
	return nil
}

// Close unmaps the stored files (matrices Load returned must not be used
// after); with remove it deletes the directory.
func (wd *WorkDir) Close(remove bool) error {
	for _, f := range wd.files {
		f.Close()
	}
	wd.files = nil
	if remove {
		return os.RemoveAll(wd.dir)
	}
	return nil
}

// SaveNote stores a small record key (JSON: a reconstructed layer's log)
// in the work directory, atomically, as key.note.json.
func (wd *WorkDir) SaveNote(key string, data []byte) error {
	return durable.WriteFile(filepath.Join(wd.dir, key+".note.json"), data)
}

// Note returns the record key, and false if it was never saved.
func (wd *WorkDir) Note(key string) ([]byte, bool, error) {
	b, err := os.ReadFile(filepath.Join(wd.dir, key+".note.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("work directory: %w", err)
	}
	return b, true, nil
}
