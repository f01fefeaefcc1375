package forge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/bundle"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/quant"
	"forge/safetensors"
)

// workStore keeps the matrices a quantize run has finished in OUT.work,
// one safetensors file per matrix (written atomically), so that an
// interrupted run resumes (--resume) and the bundle is assembled at the
// end without holding every quantized matrix in memory. recipe.json in
// the directory is the run's settings; a resume with other settings is
// refused. The directory carries forge's marker (internal/outpath), so a
// run only ever removes its own work directory. Each file's metadata holds
// a SHA-256 of its matrix facts and arrays (workSum), checked when the
// file is loaded: a damaged file is never baked into a bundle.
type workStore struct {
	dir   string
	files []*safetensors.File
	// Damaged, if set, hears of each stored matrix that failed its check
	// and was removed to be made again.
	Damaged func(path string)
}

// workKind is the marker kind of a quantize work directory.
const workKind = "quantize-work"

// workInfo is a stored matrix's metadata.
type workInfo struct {
	Format string           `json:"format"`
	Out    int              `json:"out"`
	In     int              `json:"in"`
	Rank   int              `json:"rank"`
	Rot    *uint64          `json:"rotation_seed,omitempty"`
	SNR    *bundle.SNREntry `json:"snr,omitempty"`
}

// openWork prepares OUT.work for a run with the given recipe: with resume
// it keeps a directory made with the same recipe (and refuses one made
// with another); without, it starts empty. A directory at OUT.work that
// forge did not make, or that another live forge process is writing, is
// refused.
func openWork(out string, recipe []byte, resume bool) (*workStore, error) {
	dir := filepath.Clean(out) + ".work"
	ws := &workStore{dir: dir}
	rp := filepath.Join(dir, "recipe.json")
	if resume {
		old, err := os.ReadFile(rp)
		switch {
		case err == nil && string(old) != string(recipe):
			return nil, fmt.Errorf("quantize: resume: %s was made with other settings:\n  then: %s\n  now:  %s", dir, old, recipe)
		case err == nil:
			m, _ := outpath.ReadMarker(dir)
			if m.PID != 0 && m.PID != os.Getpid() && durable.Alive(m.PID) {
				return nil, fmt.Errorf("quantize: %s is being written by another forge process (pid %d)", dir, m.PID)
			}
			if err := outpath.WriteMarker(dir, outpath.Marker{Kind: workKind, ForgeVersion: Version, PID: os.Getpid()}); err != nil {
				return nil, fmt.Errorf("quantize: %w", err)
			}
			return ws, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("quantize: %w", err)
		}
	}
	if err := outpath.RemoveDir(dir, workKind); err != nil {
		return nil, fmt.Errorf("quantize: work directory: %w", err)
	}
	if err := outpath.MakeDir(dir, workKind, Version); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if err := durable.WriteFile(rp, recipe); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	return ws, nil
}

// stored counts the matrices in the work directory.
func (ws *workStore) stored() int {
	m, _ := filepath.Glob(filepath.Join(ws.dir, "*.safetensors"))
	return len(m)
}

// size is the bytes the work directory holds.
func (ws *workStore) size() int64 {
	var n int64
	filepath.WalkDir(ws.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// workSum is the SHA-256 (hex) of a stored matrix: its metadata JSON, then
// each array's name, length and bytes, in name order.
func workSum(meta []byte, names []string, arrays [][]byte) string {
	h := sha256.New()
	h.Write(meta)
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

func (ws *workStore) path(name string) string { return filepath.Join(ws.dir, name+".safetensors") }

// save stores m (and its SNRs) under name, atomically.
func (ws *workStore) save(name string, m *lut.Matrix, snr *bundle.SNREntry) error {
	out, in := m.Dims()
	p := m.Parts()
	info := workInfo{Format: m.Format().String(), Out: out, In: in, Rank: m.Rank(), SNR: snr}
	if h, ok := p.Rotation.(*quant.Hadamard); ok {
		s := h.Seed()
		info.Rot = &s
	}
	meta, err := json.Marshal(info)
	if err != nil {
		return err
	}
	var ts []safetensors.Tensor
	var names []string
	var arrays [][]byte
	add := func(k string, b []byte) {
		if len(b) > 0 {
			ts = append(ts, safetensors.Tensor{Name: k, DType: safetensors.U8, Shape: []int{len(b)}, Data: b})
			names, arrays = append(names, k), append(arrays, b)
		}
	}
	add("lut", u16le(p.LUT))
	add("idx", p.Index)
	add("scale", u16le(p.Scale))
	add("weight", u16le(p.Weight))
	add("lr_a", u16le(p.LowRankA))
	add("lr_b", u16le(p.LowRankB))
	return safetensors.WriteFile(ws.path(name), ts, map[string]string{
		"forge.work": string(meta), "forge.work.sha256": workSum(meta, names, arrays)})
}

// load returns the stored matrix name (its arrays mapped from the file,
// which stays open until close), or ok = false if it is not stored. A
// stored file that does not open or fails its SHA-256 is removed (and
// reported to Damaged): the matrix is made again.
func (ws *workStore) load(name string) (m *lut.Matrix, snr *bundle.SNREntry, ok bool, err error) {
	path := ws.path(name)
	f, err := safetensors.Open(path)
	if err == nil {
		err = checkWorkFile(f)
		if err != nil {
			f.Close()
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		if rmErr := os.Remove(path); rmErr != nil {
			return nil, nil, false, fmt.Errorf("quantize: resume: %w (and it cannot be removed: %v)", err, rmErr)
		}
		if ws.Damaged != nil {
			ws.Damaged(path)
		}
		return nil, nil, false, nil
	}
	ws.files = append(ws.files, f)
	var info workInfo
	if err := json.Unmarshal([]byte(f.Metadata()["forge.work"]), &info); err != nil {
		return nil, nil, false, fmt.Errorf("quantize: resume: %s: %w", f.Path(), err)
	}
	fm, err := lut.ParseFormat(info.Format)
	if err != nil {
		return nil, nil, false, fmt.Errorf("quantize: resume: %s: %w", f.Path(), err)
	}
	get := func(k string) ([]byte, error) {
		if _, ok := f.Info(k); !ok {
			return nil, nil
		}
		return f.Bytes(k)
	}
	var p lut.Parts
	arrays := []struct {
		k   string
		u16 *[]uint16
		raw *[]byte
	}{{"lut", &p.LUT, nil}, {"idx", nil, &p.Index}, {"scale", &p.Scale, nil}, {"weight", &p.Weight, nil},
		{"lr_a", &p.LowRankA, nil}, {"lr_b", &p.LowRankB, nil}}
	for _, a := range arrays {
		b, err := get(a.k)
		if err != nil {
			return nil, nil, false, fmt.Errorf("quantize: resume: %w", err)
		}
		if a.raw != nil {
			*a.raw = b
		} else if len(b) > 0 {
			*a.u16 = fromLE16(b)
		}
	}
	if info.Rot != nil {
		p.Rotation = quant.NewHadamard(info.In, *info.Rot)
	}
	m, err = lut.New(fm, info.Out, info.In, p)
	if err != nil {
		return nil, nil, false, fmt.Errorf("quantize: resume: %s: %w", f.Path(), err)
	}
	return m, info.SNR, true, nil
}

// checkWorkFile verifies a stored matrix against the SHA-256 in its
// metadata.
func checkWorkFile(f *safetensors.File) error {
	meta := f.Metadata()
	want, ok := meta["forge.work.sha256"]
	if !ok {
		return fmt.Errorf("%s: no forge.work.sha256 (made by an older forge, or damaged)", f.Path())
	}
	var names []string
	var arrays [][]byte
	for _, k := range f.Names() {
		b, err := f.Bytes(k)
		if err != nil {
			return err
		}
		names, arrays = append(names, k), append(arrays, b)
	}
	if got := workSum([]byte(meta["forge.work"]), names, arrays); got != want {
		return fmt.Errorf("%s: SHA-256 %s, recorded %s: damaged", f.Path(), got, want)
	}
	return nil
}

// close unmaps the stored files; with remove it deletes the directory.
func (ws *workStore) close(remove bool) error {
	for _, f := range ws.files {
		f.Close()
	}
	ws.files = nil
	if remove {
		return os.RemoveAll(ws.dir)
	}
	return nil
}

func u16le(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		b[2*i], b[2*i+1] = byte(x), byte(x>>8)
	}
	return b
}

func fromLE16(b []byte) []uint16 {
	v := make([]uint16, len(b)/2)
	for i := range v {
		v[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return v
}
