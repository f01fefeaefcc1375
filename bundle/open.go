package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// Bundle is an opened, verified export. It is a model.Source.
type Bundle struct {
	dir      string
	man      *Manifest
	cfg      model.Config
	files    []*safetensors.File
	tensors  map[string]*safetensors.File // tensor name → shard
	matrices map[string]MatrixEntry
	built    map[string]*lut.Matrix // validated by Open, handed out by Matrix
	// factsShard maps a matrix to the shard whose metadata holds its facts
	// (version 2).
	factsShard map[string]string
}

var _ model.Source = (*Bundle)(nil)

// Open reads the manifest, checks the size and SHA-256 of every file it
// lists, opens the shards and checks the manifest against them and against
// config.json (doc.go, "Integrity"): the facts of every matrix against the
// shards' metadata (version 2), every tensor accounted for and every tensor
// the model needs present, each matrix's bytes and bits per weight, finite
// values in the small float arrays, arrays of exactly the size the formats
// call for, and the manifest's content hash (version 2). Errors name the
// file, the matrix or tensor, and the field.
func Open(dir string) (*Bundle, error) {
	man, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	b := &Bundle{dir: dir, man: man, tensors: map[string]*safetensors.File{}, matrices: map[string]MatrixEntry{},
		built: map[string]*lut.Matrix{}, factsShard: map[string]string{}}
	if err := b.verifyFiles(); err != nil {
		return nil, err
	}
	raw, err := budget.ReadFile(filepath.Join(dir, "config.json"), budget.MaxConfigFile)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	if b.cfg, err = checkpoint.ParseConfig(raw); err != nil {
		return nil, fmt.Errorf("bundle %s: config.json: %w", dir, err)
	}
	for _, m := range man.Matrices {
		b.matrices[m.Name] = m
	}
	if err := b.openShards(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.verify(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// verify runs the checks of Open after the file hashes, cheapest and most
// specific first, so that an edited field is reported by name.
func (b *Bundle) verify() error {
	if err := b.checkShardFacts(); err != nil {
		return err
	}
	if err := b.checkAccounting(); err != nil {
		return err
	}
	if err := b.checkFinite(); err != nil {
		return err
	}
	for _, m := range b.man.Matrices { // validate every matrix's arrays once, here
		if _, err := b.Linear(m.Name); err != nil {
			return err
		}
	}
	return b.checkContentHash()
}

func (b *Bundle) verifyFiles() error {
	if !slices.ContainsFunc(b.man.Files, func(f FileEntry) bool { return f.Name == "config.json" }) {
		return fmt.Errorf("bundle %s: %s does not list config.json", b.dir, ManifestName)
	}
	for _, f := range b.man.Files {
		if f.Name != filepath.Base(f.Name) || f.Name == ManifestName {
			return fmt.Errorf("bundle %s: %s lists a bad file name %q", b.dir, ManifestName, f.Name)
		}
		path := filepath.Join(b.dir, f.Name)
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("bundle %s: %s: %w", b.dir, f.Name, err)
		}
		if st.Size() != f.Bytes {
			return fmt.Errorf("bundle %s: %s is %d bytes, the manifest says %d (truncated or replaced)", b.dir, f.Name, st.Size(), f.Bytes)
		}
		_, sum, err := hashFile(path)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", b.dir, err)
		}
		if sum != f.SHA256 {
			return fmt.Errorf("bundle %s: %s has SHA-256 %s, the manifest says %s (corrupted or modified)", b.dir, f.Name, sum, f.SHA256)
		}
	}
	return nil
}

func (b *Bundle) openShards() error {
	for _, f := range b.man.Files {
		if !strings.HasSuffix(f.Name, ".safetensors") {
			continue
		}
		sf, err := safetensors.Open(filepath.Join(b.dir, f.Name))
		if err != nil {
			return fmt.Errorf("bundle %s: %w", b.dir, err)
		}
		b.files = append(b.files, sf)
		for _, n := range sf.Names() {
			if _, dup := b.tensors[n]; dup {
				return fmt.Errorf("bundle %s: tensor %q is in two shards", b.dir, n)
			}
			b.tensors[n] = sf
		}
	}
	return nil
}

// Dir returns the bundle directory.
func (b *Bundle) Dir() string { return b.dir }

// Manifest returns the verified manifest.
func (b *Bundle) Manifest() *Manifest { return b.man }

// Config returns the model configuration (config.json).
func (b *Bundle) Config() (model.Config, error) { return b.cfg, nil }

// Vector returns a raw tensor widened to float32.
func (b *Bundle) Vector(name string) ([]float32, error) {
	f, ok := b.tensors[name]
	if !ok {
		return nil, fmt.Errorf("bundle %s: no tensor %q", b.dir, name)
	}
	return f.Float32(name)
}

// Raw returns a tensor as the bundle's shards store it: its header entry
// (dtype, shape) and its bytes, mapped read-only (valid until Close).
func (b *Bundle) Raw(name string) (safetensors.TensorInfo, []byte, error) {
	f, ok := b.tensors[name]
	if !ok {
		return safetensors.TensorInfo{}, nil, fmt.Errorf("bundle %s: no tensor %q", b.dir, name)
	}
	info, _ := f.Info(name)
	data, err := f.Bytes(name)
	return info, data, err
}

// Linear returns a matrix: a lut.Matrix for a quantized (or lut bf16)
// matrix, a dense one for a matrix kept raw.
func (b *Bundle) Linear(name string) (model.Linear, error) {
	if m, err := b.Matrix(name); err != nil || m != nil {
		return m, err
	}
	f, ok := b.tensors[name]
	if !ok {
		return nil, fmt.Errorf("bundle %s: no tensor %q", b.dir, name)
	}
	info, _ := f.Info(name)
	if len(info.Shape) != 2 {
		return nil, fmt.Errorf("bundle %s: tensor %q has shape %v, not a matrix", b.dir, name, info.Shape)
	}
	out, in := info.Shape[0], info.Shape[1]
	switch info.DType {
	case safetensors.BF16, safetensors.F16:
		w, err := f.Uint16(name)
		if err != nil {
			return nil, err
		}
		if info.DType == safetensors.BF16 {
			return tensor.DenseBF16(out, in, w), nil
		}
		return tensor.DenseF16(out, in, w), nil
	case safetensors.F32:
		w, err := f.Float32(name)
		if err != nil {
			return nil, err
		}
		return tensor.DenseF32(out, in, w), nil
	}
	return nil, fmt.Errorf("bundle %s: tensor %q has dtype %v, not a float", b.dir, name, info.DType)
}

// Matrix returns the lut.Matrix of a matrix the manifest records in a lut
// format, or nil if the manifest records name as a raw tensor. Matrices are
// built (and their arrays validated) once; later calls return the same one.
func (b *Bundle) Matrix(name string) (*lut.Matrix, error) {
	e, ok := b.matrices[name]
	if !ok || e.Raw {
		return nil, nil
	}
	if m, ok := b.built[name]; ok {
		return m, nil
	}
	m, err := DecodeMatrix(name, factsOf(e), shardArrays(b.tensors))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.dir, err)
	}
	b.built[name] = m
	return m, nil
}

// shardArrays gives a bundle's tensors by name from the shard holding each
// (Arrays).
type shardArrays map[string]*safetensors.File

func (s shardArrays) file(name string) (*safetensors.File, error) {
	f, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	return f, nil
}

func (s shardArrays) Bytes(name string) ([]byte, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Bytes(name)
}

// Evict drops the resident pages of b, a view of tensor name's shard
// (safetensors.File.Evict).
func (s shardArrays) Evict(name string, b []byte) {
	if f, ok := s[name]; ok {
		f.Evict(b)
	}
}

func (s shardArrays) Uint16(name string) ([]uint16, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Uint16(name)
}

// Close unmaps the shards; matrices handed out must not be used after.
func (b *Bundle) Close() error {
	for _, f := range b.files {
		f.Close()
	}
	b.files = nil
	return nil
}

// IsBundle reports whether dir holds a bundle manifest.
func IsBundle(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ManifestName))
	return err == nil
}

// Incomplete reports whether dir, which has no forge.json, is nevertheless
// the remains of a bundle: an export's working directory (a name ending in
// ".partial", or forge's marker of one), a directory whose shards carry forge's
// safetensors metadata ({"format": "forge"}), or a path that does not exist
// beside a PATH.partial. The reason completes the sentence "DIR has no
// forge.json: …". A directory with forge.json, or one that looks like
// anything else (a Hugging Face checkpoint), gives ok = false.
func Incomplete(dir string) (reason string, ok bool) {
	if IsBundle(dir) {
		return "", false
	}
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	if err != nil {
		if ps, perr := os.Stat(dir + ".partial"); perr == nil && ps.IsDir() {
			return fmt.Sprintf("it does not exist, but %s.partial does: an export to it did not finish (rerun it)", dir), true
		}
		return "", false
	}
	if !st.IsDir() {
		return "", false
	}
	if strings.HasSuffix(dir, ".partial") {
		return "it is an export's working directory (OUT.partial): an unfinished bundle, left by an export that was interrupted or is still running", true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	if m, ok := outpath.ReadMarker(dir); ok && m.Kind == PartialKind {
		return "it is an export's working directory (its marker says so): an unfinished bundle", true
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		f, err := safetensors.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		forge := f.Metadata()[metaFormat] == "forge"
		f.Close()
		if forge {
			return fmt.Sprintf("its shard %s was written by forge, but the manifest, written last, is missing: an unfinished or damaged bundle", e.Name()), true
		}
	}
	return "", false
}

// StoredBytes returns the bytes a text-model tensor occupies in the bundle:
// a recorded matrix's packed arrays, or a raw tensor's data.
func (b *Bundle) StoredBytes(name string) (int64, bool) {
	if e, ok := b.matrices[name]; ok {
		return e.Bytes, true
	}
	f, ok := b.tensors[name]
	if !ok {
		return 0, false
	}
	info, _ := f.Info(name)
	return info.End - info.Begin, true
}

// Misaligned returns how many of the bundle's index arrays (tensors
// named *.idx) do not start at a multiple of safetensors.DataAlign bytes
// of their file, and how many there are. Bundles written before the
// writer aligned them (2026-12-04) have most of them 24 bytes past a
// cache line, so that every 64-byte load of the int8 kernels spans two
// lines: on a Zen 5 EPYC such a bundle decoded ~30% slower than the same
// weights aligned (BENCHMARKS.md, issue 12). Writing the bundle again
// aligns them.
func (b *Bundle) Misaligned() (n, of int) {
	for _, sf := range b.files {
		for _, name := range sf.Names() {
			if !strings.HasSuffix(name, ".idx") {
				continue
			}
			of++
			if off, _ := sf.Offset(name); off%safetensors.DataAlign != 0 {
				n++
			}
		}
	}
	return n, of
}

// Entry returns the manifest's record of a matrix.
func (b *Bundle) Entry(name string) (MatrixEntry, bool) {
	e, ok := b.matrices[name]
	return e, ok
}
