package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"forge/bundle"
	"forge/lut"
	"forge/quant"
	"forge/safetensors"
)

// workStore keeps the matrices a quantize run has finished in OUT.work,
// one safetensors file per matrix (written atomically), so that an
// interrupted run resumes (--resume) and the bundle is assembled at the
// end without holding every quantized matrix in memory. recipe.json in
// the directory is the run's settings; a resume with other settings is
// refused.
type workStore struct {
	dir   string
	files []*safetensors.File
}

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
// with another); without, it starts empty.
func openWork(out string, recipe []byte, resume bool) (*workStore, error) {
	dir := filepath.Clean(out) + ".work"
	ws := &workStore{dir: dir}
	rp := filepath.Join(dir, "recipe.json")
	if resume {
		old, err := os.ReadFile(rp)
		switch {
		case err == nil && string(old) != string(recipe):
			return nil, fmt.Errorf("quantize: --resume: %s was made with other settings:\n  then: %s\n  now:  %s", dir, old, recipe)
		case err == nil:
			return ws, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("quantize: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if err := os.WriteFile(rp, recipe, 0o644); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	return ws, nil
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
	add := func(k string, b []byte) {
		if len(b) > 0 {
			ts = append(ts, safetensors.Tensor{Name: k, DType: safetensors.U8, Shape: []int{len(b)}, Data: b})
		}
	}
	add("lut", u16le(p.LUT))
	add("idx", p.Index)
	add("scale", u16le(p.Scale))
	add("weight", u16le(p.Weight))
	add("lr_a", u16le(p.LowRankA))
	add("lr_b", u16le(p.LowRankB))
	return safetensors.WriteFile(ws.path(name), ts, map[string]string{"forge.work": string(meta)})
}

// load returns the stored matrix name (its arrays mapped from the file,
// which stays open until close), or ok = false if it is not stored.
func (ws *workStore) load(name string) (m *lut.Matrix, snr *bundle.SNREntry, ok bool, err error) {
	f, err := safetensors.Open(ws.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("quantize: resume: %w", err)
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
