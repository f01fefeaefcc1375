package checkpoint

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

	"forge/internal/budget"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// Checkpoint is an opened Hugging Face Qwen3.5 checkpoint directory. It is
// a model.Source; weights stay in their stored dtype in the mmap'd files.
type Checkpoint struct {
	dir     string
	cfg     model.Config
	files   []*safetensors.File
	tensors map[string]entry // by name without prefix
}

type entry struct {
	file *safetensors.File
	name string // name in the file
	info safetensors.TensorInfo
}

// TensorInfo describes one text-model tensor of the checkpoint.
type TensorInfo struct {
	Spec  model.TensorSpec
	DType safetensors.DType
	Bytes int64
	File  string
}

var _ model.Source = (*Checkpoint)(nil)

// Open reads dir/config.json and the safetensors files (one
// model.safetensors, or shards listed by model.safetensors.index.json), and
// checks that every tensor of the text model is present with the shape the
// config implies and a float dtype. Errors name the file, field or tensor.
func Open(dir string) (*Checkpoint, error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := budget.ReadFile(cfgPath, budget.MaxConfigFile)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", cfgPath, err)
	}
	c := &Checkpoint{dir: dir, cfg: cfg, tensors: map[string]entry{}}
	if err := c.openFiles(); err != nil {
		c.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := c.check(); err != nil {
		c.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return c, nil
}

// openFiles maps every text tensor's stripped name to its file.
func (c *Checkpoint) openFiles() error {
	shards, weightMap, err := c.shardList()
	if err != nil {
		return err
	}
	for _, shard := range shards {
		f, err := safetensors.Open(filepath.Join(c.dir, shard))
		if err != nil {
			return err
		}
		c.files = append(c.files, f)
		for _, name := range f.Names() {
			if weightMap != nil && weightMap[name] != shard {
				if _, listed := weightMap[name]; listed {
					return fmt.Errorf("%s: tensor %q is listed in model.safetensors.index.json under %s", shard, name, weightMap[name])
				}
			}
			short, ok := StripPrefix(name)
			if !ok {
				continue
			}
			if prev, dup := c.tensors[short]; dup {
				return fmt.Errorf("tensor %q appears twice (%s in %s, %s in %s)", short, prev.name, filepath.Base(prev.file.Path()), name, shard)
			}
			info, _ := f.Info(name)
			c.tensors[short] = entry{file: f, name: name, info: info}
		}
	}
	for name, shard := range weightMap {
		if _, ok := StripPrefix(name); !ok {
			continue
		}
		f := c.files[slices.Index(shards, shard)]
		if _, ok := f.Info(name); !ok {
			return fmt.Errorf("model.safetensors.index.json lists tensor %q in %s, which does not hold it", name, shard)
		}
	}
	return nil
}

// shardList returns the safetensors files to read and, when sharded, the
// index's weight_map.
func (c *Checkpoint) shardList() ([]string, map[string]string, error) {
	idxPath := filepath.Join(c.dir, "model.safetensors.index.json")
	raw, err := budget.ReadFile(idxPath, budget.MaxManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(c.dir, "model.safetensors")); err != nil {
			return nil, nil, fmt.Errorf("no model.safetensors or model.safetensors.index.json: %w", err)
		}
		return []string{"model.safetensors"}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("%s: empty or missing weight_map", idxPath)
	}
	var shards []string
	for _, s := range idx.WeightMap {
		if s != filepath.Base(s) || !strings.HasSuffix(s, ".safetensors") {
			return nil, nil, fmt.Errorf("%s: shard name %q is not a .safetensors file in the checkpoint directory", idxPath, s)
		}
		if !slices.Contains(shards, s) {
			shards = append(shards, s)
		}
	}
	slices.Sort(shards)
	return shards, idx.WeightMap, nil
}

// StripPrefix maps a checkpoint tensor name to the text model's name
// (docs/model.md §3.1): it strips model.language_model., language_model.model. or
// model., keeps lm_head.weight, and reports false for the vision tower,
// the MTP head and anything else outside the text model.
func StripPrefix(name string) (string, bool) {
	switch {
	case name == "lm_head.weight":
		return name, true
	case strings.HasPrefix(name, "model.visual."), strings.HasPrefix(name, "mtp."):
		return "", false
	}
	for _, p := range []string{"model.language_model.", "language_model.model.", "model."} {
		if s, ok := strings.CutPrefix(name, p); ok {
			return s, true
		}
	}
	return "", false
}

// check compares the tensors found with those the config implies.
func (c *Checkpoint) check() error {
	want := map[string]bool{}
	for _, spec := range model.Tensors(&c.cfg) {
		want[spec.Name] = true
		e, ok := c.tensors[spec.Name]
		if !ok {
			return fmt.Errorf("missing tensor %q", spec.Name)
		}
		if !slices.Equal(e.info.Shape, spec.Shape) {
			return fmt.Errorf("%s: tensor %q has shape %v, config implies %v", filepath.Base(e.file.Path()), e.name, e.info.Shape, spec.Shape)
		}
		switch e.info.DType {
		case safetensors.BF16, safetensors.F16, safetensors.F32:
		default:
			return fmt.Errorf("%s: tensor %q has dtype %v, want BF16, F16 or F32", filepath.Base(e.file.Path()), e.name, e.info.DType)
		}
	}
	for name, e := range c.tensors {
		if !want[name] && !(name == "lm_head.weight" && c.cfg.Tied) {
			return fmt.Errorf("%s: unexpected tensor %q for this config (not part of the Qwen3.5 text model)", filepath.Base(e.file.Path()), e.name)
		}
	}
	return nil
}

// Dir returns the checkpoint directory.
func (c *Checkpoint) Dir() string { return c.dir }

// Config returns the parsed configuration.
func (c *Checkpoint) Config() (model.Config, error) { return c.cfg, nil }

// Vector returns a tensor flattened and widened to float32 (a new slice).
func (c *Checkpoint) Vector(name string) ([]float32, error) {
	e, ok := c.tensors[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no tensor %q", c.dir, name)
	}
	return e.file.Float32(e.name)
}

// Linear returns a 2-D weight as a dense Linear over the mmap'd data in its
// stored dtype (no copy for BF16/F16 when aligned).
func (c *Checkpoint) Linear(name string) (model.Linear, error) {
	e, ok := c.tensors[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no tensor %q", c.dir, name)
	}
	if len(e.info.Shape) != 2 {
		return nil, fmt.Errorf("checkpoint %s: tensor %q has shape %v, not a matrix", c.dir, name, e.info.Shape)
	}
	out, in := e.info.Shape[0], e.info.Shape[1]
	switch e.info.DType {
	case safetensors.BF16, safetensors.F16:
		w, err := e.file.Uint16(e.name)
		if err != nil {
			return nil, err
		}
		if e.info.DType == safetensors.BF16 {
			return tensor.DenseBF16(out, in, w), nil
		}
		return tensor.DenseF16(out, in, w), nil
	default:
		w, err := e.file.Float32(e.name)
		if err != nil {
			return nil, err
		}
		return tensor.DenseF32(out, in, w), nil
	}
}

// Tensors describes the text model's tensors in checkpoint order.
func (c *Checkpoint) Tensors() []TensorInfo {
	var out []TensorInfo
	for _, spec := range model.Tensors(&c.cfg) {
		e := c.tensors[spec.Name]
		out = append(out, TensorInfo{Spec: spec, DType: e.info.DType, Bytes: e.info.End - e.info.Begin, File: filepath.Base(e.file.Path())})
	}
	return out
}

// Close unmaps every file. Weights handed out by Linear must not be used after.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}

// Raw returns a tensor's bytes as stored (aliasing the mmap'd file).
func (c *Checkpoint) Raw(name string) ([]byte, error) {
	e, ok := c.tensors[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no tensor %q", c.dir, name)
	}
	return e.file.Bytes(e.name)
}

// Fingerprint identifies the checkpoint's contents cheaply: the hex SHA-256
// of config.json followed by, for every safetensors file in name order, its
// name, size and header (names, dtypes, shapes and offsets). It changes when
// the architecture or the tensor layout changes, not on a weight edit that
// keeps the layout; it is a provenance record, not an integrity check.
func (c *Checkpoint) Fingerprint() (string, error) {
	h := sha256.New()
	raw, err := budget.ReadFile(filepath.Join(c.dir, "config.json"), budget.MaxConfigFile)
	if err != nil {
		return "", err
	}
	h.Write(raw)
	for _, f := range c.files {
		st, err := os.Stat(f.Path())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\n%s %d\n", filepath.Base(f.Path()), st.Size())
		for _, n := range f.Names() {
			info, _ := f.Info(n)
			fmt.Fprintf(h, "%s %v %v %d %d\n", n, info.DType, info.Shape, info.Begin, info.End)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
