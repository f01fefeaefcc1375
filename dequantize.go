package forge

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/bundle"
	"forge/checkpoint"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// DequantizeShardSize is the size at which Dequantize starts a new shard:
// 4 GiB of tensor data.
const DequantizeShardSize = 4 << 30

// DequantizeConfig configures Dequantize. The zero value of every field
// but Bundle and Out is the default.
type DequantizeConfig struct {
	Bundle string // bundle directory (forge quantize's output)
	Out    string // checkpoint directory to create
	// DType is the dtype of the materialized matrices: "bf16" (the
	// default) or "f32". Raw tensors follow it only where that is exact
	// (see Dequantize).
	DType string
	// ShardSize is the tensor bytes per shard before the next one starts
	// (0: DequantizeShardSize). A checkpoint that fits one shard is written as
	// a single model.safetensors.
	ShardSize int64
	Overwrite bool // replace an existing Out
	// Progress, if set, is called after each tensor with bytes written and total.
	Progress func(done, total int64)
}

// Dequantize writes a bundle back out as a standard Hugging Face
// checkpoint directory with the quantized weights materialized, which
// transformers, vLLM or llama.cpp's converter read like any other:
//
//   - every matrix the bundle stores in a lut format becomes the dense
//     matrix the bundle's model applies, W = (Ŵ' + A·B)·Mᵀ: the stored
//     weights Ŵ' (lut.Matrix.Dequantize, exact) plus the low-rank
//     correction A·B, both in the rotated input basis, folded back to the
//     original basis by Mᵀ = M⁻¹ when the matrix has an online Hadamard
//     rotation M (x'·Ŵ'ᵀ with x' = x·M is x·(Ŵ'·Mᵀ)ᵀ). It is written in
//     DType (bf16 rounds to nearest even);
//   - every raw tensor (embeddings, norms, conv taps, A_log, dt_bias,
//     in_proj_a/b, matrices kept unquantized) is copied: converted to DType
//     when that is exact (bf16 or f16 widened to f32, or already DType),
//     else kept bit for bit in its stored dtype. No raw tensor is ever
//     rounded, so with DType f32 the checkpoint holds exactly the weights
//     the bundle's model runs, and with bf16 only the materialized matrices
//     are rounded (once);
//   - config.json and the tokenizer files (every non-safetensors file the
//     manifest lists) are copied unchanged (config.json's "dtype" is not
//     rewritten: loaders cast on load);
//   - tensor names are the text model's names with the prefix of the
//     config's class: "model.language_model." for the nested config of
//     Qwen3_5ForConditionalGeneration (config.json has text_config), else
//     "model."; the head is "lm_head.weight" (absent when tied). Tensors come
//     in checkpoint order (model.Tensors) with safetensors metadata
//     {"format": "pt"}.
//
// The output is one model.safetensors when the data fits ShardSize, else
// model-0000k-of-0000n.safetensors shards with model.safetensors.index.json.
// Everything is written to Out.partial (a leftover from an interrupted run
// is removed first), which must open with checkpoint.Open before it is
// renamed to Out; a failure leaves no Out. An existing Out is refused
// unless Overwrite. Memory: one matrix in float32 at a time.
func Dequantize(ctx context.Context, cfg DequantizeConfig) error {
	dt, err := parseDequantDType(cfg.DType)
	if err != nil {
		return err
	}
	if err := checkDequantPaths(cfg); err != nil {
		return err
	}
	b, err := bundle.Open(cfg.Bundle)
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	defer b.Close()
	d, err := newDequantizer(b, dt, cfg)
	if err != nil {
		return fmt.Errorf("dequantize %s: %w", cfg.Bundle, err)
	}
	defer d.closeFiles()
	out := filepath.Clean(cfg.Out)
	tmp := out + ".partial"
	if err := outpath.RemoveDir(tmp, "partial"); err != nil {
		return fmt.Errorf("dequantize: an interrupted output: %w", err)
	}
	if err := outpath.MakeDir(tmp, "partial", Version); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := d.write(ctx, tmp); err != nil {
		return fmt.Errorf("dequantize %s → %s: %w", cfg.Bundle, out, err)
	}
	if err := publishDir(tmp, out); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	done = true
	return nil
}

// parseDequantDType maps --dtype to the dtype of materialized matrices.
func parseDequantDType(s string) (safetensors.DType, error) {
	switch strings.ToLower(s) {
	case "", "bf16", "bfloat16":
		return safetensors.BF16, nil
	case "f32", "fp32", "float32":
		return safetensors.F32, nil
	}
	return 0, fmt.Errorf("dequantize: dtype %q: want bf16 or f32", s)
}

// checkDequantPaths refuses a missing bundle, a checkpoint given as the
// bundle, an output that is the bundle itself and an existing output.
func checkDequantPaths(cfg DequantizeConfig) error {
	if cfg.Bundle == "" || cfg.Out == "" {
		return fmt.Errorf("dequantize: a bundle and an output directory are required")
	}
	st, err := os.Stat(cfg.Bundle)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dequantize: bundle %s does not exist: %w", cfg.Bundle, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("dequantize: bundle %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("dequantize: bundle %s is not a directory", cfg.Bundle)
	}
	if !bundle.IsBundle(cfg.Bundle) {
		if _, err := os.Stat(filepath.Join(cfg.Bundle, "config.json")); err == nil {
			return fmt.Errorf("dequantize: %s has no %s: it is not a forge bundle (a Hugging Face checkpoint needs no dequantizing)", cfg.Bundle, bundle.ManifestName)
		}
		return fmt.Errorf("dequantize: %s has no %s: not a forge bundle, or an export that did not finish", cfg.Bundle, bundle.ManifestName)
	}
	out := filepath.Clean(cfg.Out)
	if err := outpath.Disjoint([]string{out + ".partial"}, []string{cfg.Bundle}); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Bundle}, outpath.Target{Path: out, Dir: true}); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	return nil
}

// dequantizer carries one Dequantize run: what to write and from where.
type dequantizer struct {
	b       *bundle.Bundle
	dt      safetensors.DType
	cfg     DequantizeConfig
	prefix  string                       // HF name prefix of text-model tensors
	raw     map[string]*safetensors.File // bundle tensor name → shard
	files   []*safetensors.File
	tensors []outTensor
	total   int64 // tensor bytes of the checkpoint
}

// outTensor is one tensor of the checkpoint to write.
type outTensor struct {
	name   string // text-model name ("layers.0.mlp.up_proj.weight")
	info   safetensors.TensorInfo
	bytes  int64             // data bytes in the output dtype
	matrix bool              // materialized from a lut.Matrix
	stored safetensors.DType // a raw tensor's dtype in the bundle
}

// newDequantizer plans the output tensors from the config and the bundle.
func newDequantizer(b *bundle.Bundle, dt safetensors.DType, cfg DequantizeConfig) (*dequantizer, error) {
	d := &dequantizer{b: b, dt: dt, cfg: cfg, raw: map[string]*safetensors.File{}}
	raw, err := os.ReadFile(filepath.Join(b.Dir(), "config.json"))
	if err != nil {
		return nil, err
	}
	if d.prefix, err = hfPrefix(raw); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if err := d.openShards(); err != nil {
		return nil, err
	}
	mc, _ := b.Config()
	for _, s := range model.Tensors(&mc) {
		t, err := d.plan(s)
		if err != nil {
			return nil, err
		}
		d.tensors = append(d.tensors, t)
		d.total += t.bytes
	}
	return d, nil
}

// hfPrefix returns the prefix a Hugging Face Qwen3.5 checkpoint of this
// config.json puts before the text model's tensor names: the multimodal
// class (nested text_config) nests the text model under
// model.language_model, the text-only class under model.
func hfPrefix(configJSON []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &top); err != nil {
		return "", err
	}
	if tc, ok := top["text_config"]; ok && string(tc) != "null" {
		return "model.language_model.", nil
	}
	return "model.", nil
}

// hfName is the checkpoint name of a text-model tensor.
func (d *dequantizer) hfName(name string) string {
	if name == "lm_head.weight" {
		return name
	}
	return d.prefix + name
}

// openShards maps every tensor of the bundle's shards (verified by
// bundle.Open) to its file, for byte-exact copies of raw tensors.
func (d *dequantizer) openShards() error {
	for _, f := range d.b.Manifest().Files {
		if !strings.HasSuffix(f.Name, ".safetensors") {
			continue
		}
		sf, err := safetensors.Open(filepath.Join(d.b.Dir(), f.Name))
		if err != nil {
			return err
		}
		d.files = append(d.files, sf)
		for _, n := range sf.Names() {
			d.raw[n] = sf
		}
	}
	return nil
}

func (d *dequantizer) closeFiles() {
	for _, f := range d.files {
		f.Close()
	}
}

// plan decides a tensor's output dtype: DType for a lut matrix; for a raw
// tensor DType when widening to it is exact, else its stored dtype.
func (d *dequantizer) plan(s model.TensorSpec) (outTensor, error) {
	t := outTensor{name: s.Name, info: safetensors.TensorInfo{Name: d.hfName(s.Name), Shape: s.Shape}}
	m, err := d.b.Matrix(s.Name)
	if err != nil {
		return t, err
	}
	if m != nil {
		out, in := m.Dims()
		if len(s.Shape) != 2 || out != s.Shape[0] || in != s.Shape[1] {
			return t, fmt.Errorf("matrix %q is %dx%d, config.json implies %v", s.Name, out, in, s.Shape)
		}
		t.matrix, t.info.DType = true, d.dt
	} else {
		f, ok := d.raw[s.Name]
		if !ok {
			return t, fmt.Errorf("no tensor %q (the config implies it)", s.Name)
		}
		info, _ := f.Info(s.Name)
		if !slices.Equal(info.Shape, s.Shape) {
			return t, fmt.Errorf("%s: tensor %q has shape %v, config.json implies %v", filepath.Base(f.Path()), s.Name, info.Shape, s.Shape)
		}
		switch info.DType {
		case safetensors.BF16, safetensors.F16, safetensors.F32:
		default:
			return t, fmt.Errorf("%s: tensor %q has dtype %v, want BF16, F16 or F32", filepath.Base(f.Path()), s.Name, info.DType)
		}
		t.stored, t.info.DType = info.DType, info.DType
		if d.dt == safetensors.F32 {
			t.info.DType = safetensors.F32 // bf16 and f16 widen exactly
		}
	}
	t.bytes = int64(t.info.NumElements()) * int64(t.info.DType.Size())
	return t, nil
}

// shards splits the tensors into runs of about ShardSize bytes, and names
// the files: model.safetensors for one, model-0000k-of-0000n for more.
func (d *dequantizer) shards() (names []string, runs [][]outTensor) {
	limit := d.cfg.ShardSize
	if limit <= 0 {
		limit = DequantizeShardSize
	}
	var cur int64
	for _, t := range d.tensors {
		if len(runs) == 0 || (cur > 0 && cur+t.bytes > limit) {
			runs = append(runs, nil)
			cur = 0
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], t)
		cur += t.bytes
	}
	if len(runs) == 1 {
		return []string{"model.safetensors"}, runs
	}
	for k := range runs {
		names = append(names, fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(runs)))
	}
	return names, runs
}

// write fills dir: copied files, shards, the index when sharded; then it
// checks that dir opens as a checkpoint.
func (d *dequantizer) write(ctx context.Context, dir string) error {
	for _, f := range d.b.Manifest().Files {
		if strings.HasSuffix(f.Name, ".safetensors") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d.b.Dir(), f.Name))
		if err != nil {
			return err
		}
		if err := durable.WriteFile(filepath.Join(dir, f.Name), data); err != nil {
			return err
		}
	}
	names, runs := d.shards()
	weightMap := map[string]string{}
	var done int64
	for k, run := range runs {
		infos := make([]safetensors.TensorInfo, len(run))
		for i, t := range run {
			infos[i] = t.info
			weightMap[t.info.Name] = names[k]
		}
		if err := d.writeShard(ctx, filepath.Join(dir, names[k]), infos, run, &done); err != nil {
			return err
		}
	}
	if len(runs) > 1 {
		index, err := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": d.total}, "weight_map": weightMap}, "", "  ")
		if err != nil {
			return err
		}
		if err := durable.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), append(index, '\n')); err != nil {
			return err
		}
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return fmt.Errorf("internal error: the written checkpoint does not open: %w", err)
	}
	return ck.Close()
}

// writeShard streams one shard's tensors.
func (d *dequantizer) writeShard(ctx context.Context, path string, infos []safetensors.TensorInfo, run []outTensor, done *int64) error {
	w, err := safetensors.Create(path, infos, map[string]string{"format": "pt"})
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, t := range run {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.matrix {
			err = d.writeMatrix(w, t)
		} else {
			err = d.writeRaw(w, t)
		}
		if err != nil {
			return err
		}
		*done += t.bytes
		if d.cfg.Progress != nil {
			d.cfg.Progress(*done, d.total)
		}
	}
	return w.Close()
}

// writeMatrix materializes W = (Ŵ' + A·B)·Mᵀ and writes it in the chosen dtype.
func (d *dequantizer) writeMatrix(w *safetensors.Writer, t outTensor) error {
	m, err := d.b.Matrix(t.name)
	if err != nil {
		return err
	}
	out, in := m.Dims()
	dense := tensor.New(out, in)
	m.Dequantize(dense)
	if r := m.Parts().Rotation; r != nil {
		h, ok := r.(*lut.Hadamard)
		if !ok {
			return fmt.Errorf("matrix %q: rotation %T cannot be folded back (only lut.Hadamard)", t.name, r)
		}
		h.UnrotateWeights(dense)
	}
	return w.WriteFloat32(t.info.Name, dense.Data[:out*in])
}

// dequantChunk is the number of values a raw tensor is widened by at a time.
const dequantChunk = 1 << 16

// writeRaw copies a raw tensor's bytes, widened to F32 in chunks when the
// output dtype is F32 and the stored one a half.
func (d *dequantizer) writeRaw(w *safetensors.Writer, t outTensor) error {
	data, err := d.raw[t.name].Bytes(t.name)
	if err != nil {
		return err
	}
	if t.info.DType == t.stored {
		return w.WriteTensor(t.info.Name, data)
	}
	if t.info.DType != safetensors.F32 {
		return errors.New("internal error: a raw tensor would be rounded")
	}
	halves := make([]uint16, dequantChunk)
	wide := make([]float32, dequantChunk)
	buf := make([]byte, 4*dequantChunk)
	for len(data) > 0 {
		n := min(len(data)/2, dequantChunk)
		for i := range n {
			halves[i] = binary.LittleEndian.Uint16(data[2*i:])
		}
		if t.stored == safetensors.BF16 {
			tensor.BF16ToF32Slice(wide[:n], halves[:n])
		} else {
			tensor.F16ToF32Slice(wide[:n], halves[:n])
		}
		for i, v := range wide[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return fmt.Errorf("tensor %q: %w", t.info.Name, err)
		}
		data = data[2*n:]
	}
	return nil
}

// publishDir seals the finished checkpoint tmp as forge's and renames it to
// out (replacing an out that checkDequantPaths accepted), durably.
func publishDir(tmp, out string) error {
	if err := outpath.Seal(tmp, "checkpoint", Version); err != nil {
		return err
	}
	return outpath.ReplaceDir(tmp, out)
}
