package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
)

// Layout is a directory in the reference layout, checked against a model
// configuration (Open) and open for reading: its files stay mapped until
// Close.
type Layout struct {
	dir     string
	files   map[string]*safetensors.File
	entries []Entry
	index   map[string]int
}

// Open checks the directory dir against the model configuration cfg
// (doc.go, "Reading") and opens it. Errors name dir, the file and the
// tensor or metadata key, and wrap ErrLayout, ErrInexpressible or a
// safetensors error.
func Open(dir string, cfg *model.Config) (*Layout, error) {
	l := &Layout{dir: dir, files: map[string]*safetensors.File{}, index: map[string]int{}}
	if err := l.open(cfg); err != nil {
		l.Close()
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	return l, nil
}

// Check is Open and Close: it reports whether dir is a valid layout of a
// model of configuration cfg.
func Check(dir string, cfg *model.Config) error {
	l, err := Open(dir, cfg)
	if err != nil {
		return err
	}
	return l.Close()
}

// Dir returns the directory.
func (l *Layout) Dir() string { return l.dir }

// Entries returns the matrices the directory holds, in file order (per
// layer the MLP then the mixer, then the head).
func (l *Layout) Entries() []Entry { return slices.Clone(l.entries) }

// Entry returns the matrix stored for forge's tensor name, if any.
func (l *Layout) Entry(name string) (Entry, bool) {
	i, ok := l.index[name]
	if !ok {
		return Entry{}, false
	}
	return l.entries[i], true
}

// Close unmaps the files; matrices built by Matrix must not be used after.
func (l *Layout) Close() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	l.files = nil
	return errors.Join(errs...)
}

func (l *Layout) open(cfg *model.Config) error {
	if err := l.checkNames(cfg); err != nil {
		return err
	}
	ms := matricesOf(cfg)
	for i, kind := range cfg.Layers {
		f, err := l.openFile(LayerFile(i))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: no %s (every layer's MLP file is required)", ErrLayout, LayerFile(i))
		}
		if err != nil {
			return err
		}
		if err := l.readMLP(f, LayerFile(i), ms.mlp[i]); err != nil {
			return err
		}
		if f, err = l.openFile(MixerFile(i)); err == nil {
			err = l.readMixer(f, MixerFile(i), kind, ms.mixer[i])
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	f, err := l.openFile(HeadFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case ms.head == nil:
		return fmt.Errorf("%s: %w: the model ties its head to the embeddings; there is no head matrix to hold", HeadFile, ErrLayout)
	default:
		es, err := readGroup(f, HeadFile, "format", []model.TensorSpec{*ms.head}, func(string) string { return "lm_head" })
		if err != nil {
			return err
		}
		for _, e := range es {
			l.add(e)
		}
	}
	for _, name := range l.fileOrder() {
		if err := checkTensors(l.files[name], name, l.entriesOf(name)); err != nil {
			return err
		}
	}
	for _, e := range l.entries {
		if err := checkValues(l.files[e.File], e); err != nil {
			return err
		}
	}
	return nil
}

// checkNames refuses a safetensors file that is not one of the layout's
// for the model (other files, such as forge-export.json, are ignored).
func (l *Layout) checkNames(cfg *model.Config) error {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	known := map[string]bool{HeadFile: true}
	for i := range cfg.Layers {
		known[LayerFile(i)], known[MixerFile(i)] = true, true
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".safetensors") && !known[n] {
			return fmt.Errorf("%w: %s is not a file of the layout of a %d-layer model (layer_00 … layer_%02d, their _mixer files, %s)",
				ErrLayout, n, len(cfg.Layers), len(cfg.Layers)-1, HeadFile)
		}
	}
	return nil
}

// openFile maps dir/name; a missing file is an error wrapping
// fs.ErrNotExist.
func (l *Layout) openFile(name string) (*safetensors.File, error) {
	path := filepath.Join(l.dir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	l.files[name] = f
	return f, nil
}

func (l *Layout) fileOrder() []string {
	var names []string
	for n := range l.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (l *Layout) entriesOf(file string) []Entry {
	var es []Entry
	for _, e := range l.entries {
		if e.File == file {
			es = append(es, e)
		}
	}
	return es
}

func (l *Layout) add(e Entry) {
	l.index[e.Name] = len(l.entries)
	l.entries = append(l.entries, e)
}

// metaErr is an error about a metadata key of a file.
func metaErr(file, key, format string, args ...any) error {
	return fmt.Errorf("%s: %w: metadata %q: %s", file, ErrLayout, key, fmt.Sprintf(format, args...))
}

// metaInt parses a non-negative decimal metadata value.
func metaInt(meta map[string]string, file, key string) (uint64, error) {
	v, ok := meta[key]
	if !ok {
		return 0, metaErr(file, key, "missing (basis online records seed_in, seed_mid and block)")
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, metaErr(file, key, "%q is not a non-negative integer", v)
	}
	return n, nil
}

// readMLP reads layer file's metadata (basis, seeds, block, sign
// generator, the three formats) and adds gate, up and down.
func (l *Layout) readMLP(f *safetensors.File, file string, specs []model.TensorSpec) error {
	meta := f.Metadata()
	var seedIn, seedMid uint64
	var block int
	var signs lut.SignSource
	switch basis, ok := meta["basis"]; {
	case !ok:
		return metaErr(file, "basis", "missing (want %q or %q)", BasisOnline, BasisPlain)
	case basis == BasisOnline:
		rng, ok := meta["sign_rng"]
		var err error
		if signs, err = parseSignRNG(file, rng, ok); err != nil {
			return err
		}
		if seedIn, err = metaInt(meta, file, "seed_in"); err != nil {
			return err
		}
		if seedMid, err = metaInt(meta, file, "seed_mid"); err != nil {
			return err
		}
		b, err := metaInt(meta, file, "block")
		if err != nil {
			return err
		}
		for _, s := range specs {
			if want := lut.HadamardBlock(s.Shape[1]); b != uint64(want) {
				return metaErr(file, "block", "%d, but forge's rotation of %s's %d-wide input has %d-wide blocks", b, s.Role, s.Shape[1], want)
			}
		}
		block = int(b)
	case basis != BasisPlain:
		return metaErr(file, "basis", "%q: want %q or %q", basis, BasisOnline, BasisPlain)
	}
	for _, s := range specs {
		e, err := entryOf(f, file, s, s.Role, meta[s.Role+".format"], s.Role+".format")
		if err != nil {
			return err
		}
		if block > 0 {
			e.Rotation = &Rotation{Seed: seedIn, Block: block, Signs: signs}
			if s.Role == "down" {
				e.Rotation.Seed = seedMid
			}
			if e.Rank > 0 {
				return fmt.Errorf("%s: %w: tensor %q: low-rank factors under the online basis (the reference adds MLP factors in the original basis, forge in the rotated one)",
					file, ErrInexpressible, s.Role+".lr_a")
			}
		}
		l.add(e)
	}
	return nil
}

// entryOf is the matrix s stored under key in format (from the metadata
// key formatKey), its rank read from key.lr_a's shape.
func entryOf(f *safetensors.File, file string, s model.TensorSpec, key, format, formatKey string) (Entry, error) {
	e := Entry{Name: s.Name, File: file, Key: key, Shape: [2]int{s.Shape[0], s.Shape[1]}}
	if format == "" {
		return e, metaErr(file, formatKey, "missing")
	}
	fm, err := ParseFormat(format)
	if err == nil {
		err = fm.CheckShape(e.Shape[0], e.Shape[1])
	}
	if err != nil {
		return e, fmt.Errorf("%s: metadata %q: %w", file, formatKey, err)
	}
	e.Format = fm
	if info, ok := f.Info(key + ".lr_a"); ok {
		if len(info.Shape) != 2 || info.Shape[0] != e.Shape[0] || info.Shape[1] < 1 {
			return e, fmt.Errorf("%s: %w: tensor %q: shape %v, want [%d, r] with r ≥ 1", file, ErrLayout, key+".lr_a", info.Shape, e.Shape[0])
		}
		if !fm.Quantized() {
			return e, fmt.Errorf("%s: %w: tensor %q: low-rank factors on an unquantized (%s) matrix", file, ErrLayout, key+".lr_a", fm)
		}
		e.Rank = info.Shape[1]
	}
	return e, nil
}

// readMixer reads layer file's mixer: kind, no rotation, format for the
// matrices but attention k/v, kv_format for those.
func (l *Layout) readMixer(f *safetensors.File, file string, kind model.LayerKind, specs []model.TensorSpec) error {
	meta := f.Metadata()
	switch k, ok := meta["kind"]; {
	case !ok:
		return metaErr(file, "kind", "missing (config.json makes this layer %q)", kind)
	case k != kind.String():
		return metaErr(file, "kind", "%q: config.json makes this layer %q", k, kind)
	}
	if b, ok := meta["basis"]; ok && b != BasisPlain {
		return fmt.Errorf("%s: %w: mixer basis %q: forge rotates only MLP inputs", file, ErrInexpressible, b)
	}
	var main, kv []model.TensorSpec
	for _, s := range specs {
		if s.Part == model.PartKV {
			kv = append(kv, s)
		} else {
			main = append(main, s)
		}
	}
	es, err := readGroup(f, file, "format", main, mixerKey)
	if err != nil {
		return err
	}
	kvs, err := readGroup(f, file, "kv_format", kv, mixerKey)
	if err != nil {
		return err
	}
	all := append(es, kvs...)
	for _, s := range specs { // in checkpoint order, as Plan lists them
		if i := slices.IndexFunc(all, func(e Entry) bool { return e.Name == s.Name }); i >= 0 {
			l.add(all[i])
		}
	}
	return nil
}

// readGroup returns the matrices specs of a file whose format is the
// metadata formatKey, stored under key(name): every one of them when it is
// quantized; for bf16 or fp16 those with tensors in the file (the rest
// come from the checkpoint).
func readGroup(f *safetensors.File, file, formatKey string, specs []model.TensorSpec, key func(name string) string) ([]Entry, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	format, ok := f.Metadata()[formatKey]
	if !ok {
		return nil, metaErr(file, formatKey, "missing")
	}
	var es []Entry
	for _, s := range specs {
		e, err := entryOf(f, file, s, key(s.Name), format, formatKey)
		if err != nil {
			return nil, err
		}
		if e.Format.Quantized() || slices.ContainsFunc(f.Names(), func(n string) bool { return strings.HasPrefix(n, e.Key+".") }) {
			es = append(es, e)
		}
	}
	return es, nil
}
