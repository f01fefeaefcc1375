package forge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"forge/bundle"
	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// DequantizeShardSize is the size at which Dequantize starts a new shard:
// 4 GiB of tensor data.
const DequantizeShardSize = checkpoint.DefaultShardSize

// DequantizeDType is the dtype of the materialized matrices when
// DequantizeConfig.DType is empty.
const DequantizeDType = "bf16"

// DequantizeConfig configures Dequantize. The zero value of every field
// but Bundle and Out is the default.
type DequantizeConfig struct {
	Bundle string // bundle directory (forge quantize's output)
	Out    string // checkpoint directory to create
	// DType is the dtype of the materialized matrices: "bf16" (""
	// means DequantizeDType) or "f32". Raw tensors follow it only where
	// that is exact.
	DType     string
	ShardSize int64 // tensor bytes per shard (0: DequantizeShardSize)
	Overwrite bool  // replace an existing Out that forge wrote
	// Progress, if set, is called after each tensor with bytes written and total.
	Progress func(done, total int64)
}

// Dequantize writes a bundle back out as a Hugging Face checkpoint
// directory (checkpoint.Writer: names, shards, index, OUT.partial) that
// transformers, vLLM or llama.cpp's converter read like any other:
//
//   - every matrix the bundle stores in a lut format becomes the dense
//     matrix the bundle's model applies, W = (Ŵ' + A·B)·Mᵀ: the stored
//     weights plus the low-rank correction (lut.Matrix.Dequantize, in the
//     rotated input basis) folded back by Mᵀ = M⁻¹ when the matrix has an
//     online Hadamard rotation M. It is written in DType (bf16 rounds to
//     nearest even);
//   - every raw tensor is copied: converted to DType when that is exact
//     (bf16 or f16 widened to f32, or already DType), else kept bit for bit.
//     So with f32 the checkpoint holds exactly the weights the bundle's
//     model runs, and with bf16 only the materialized matrices are rounded;
//   - config.json and the tokenizer files (every non-safetensors file the
//     manifest lists) are copied unchanged.
//
// Refused before any writing: an output that overlaps the bundle, an
// existing Out without Overwrite or not forge's, too little free disk. A
// failure leaves no Out. Memory: one matrix in float32 at a time.
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
	tensors, err := dequantTensors(b, dt)
	if err != nil {
		return fmt.Errorf("dequantize %s: %w", cfg.Bundle, err)
	}
	config, err := budget.ReadFile(filepath.Join(cfg.Bundle, "config.json"), budget.MaxConfigFile)
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	w, err := checkpoint.Create(ctx, cfg.Out, config, tensors, checkpoint.WriterOptions{
		ShardSize: cfg.ShardSize, Overwrite: cfg.Overwrite, Version: Version, Progress: cfg.Progress})
	if err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	defer w.Abort()
	if err := writeDequantized(w, b, tensors); err != nil {
		return fmt.Errorf("dequantize %s → %s: %w", cfg.Bundle, cfg.Out, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("dequantize %s → %s: %w", cfg.Bundle, cfg.Out, err)
	}
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
	if _, err := checkStagedDir(cfg.Overwrite, []string{cfg.Bundle}, outpath.Target{Path: cfg.Out}); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	return nil
}

// dequantTensors lists the checkpoint's tensors in checkpoint order
// (model.Tensors) with their dtypes: dt for a matrix the bundle stores in
// a lut format; for a raw tensor F32 when dt is F32 (bf16 and f16 widen
// exactly), else its stored dtype. (bundle.Open has checked every shape
// and that raw tensors are floats.)
func dequantTensors(b *bundle.Bundle, dt safetensors.DType) ([]checkpoint.Tensor, error) {
	mc, _ := b.Config()
	var out []checkpoint.Tensor
	for _, s := range model.Tensors(&mc) {
		t := checkpoint.Tensor{Name: s.Name, DType: dt, Shape: s.Shape}
		if m, err := b.Matrix(s.Name); err != nil {
			return nil, err
		} else if m == nil && dt != safetensors.F32 {
			info, _, err := b.Raw(s.Name)
			if err != nil {
				return nil, err
			}
			t.DType = info.DType
		}
		out = append(out, t)
	}
	return out, nil
}

// writeDequantized copies the bundle's non-weight files and streams the
// tensors: matrices materialized, raw tensors copied or widened exactly.
func writeDequantized(w *checkpoint.Writer, b *bundle.Bundle, tensors []checkpoint.Tensor) error {
	for _, f := range b.Manifest().Files {
		if strings.HasSuffix(f.Name, ".safetensors") || f.Name == "config.json" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(b.Dir(), f.Name))
		if err != nil {
			return err
		}
		if err := w.WriteFile(f.Name, data); err != nil {
			return err
		}
	}
	for _, t := range tensors {
		m, err := b.Matrix(t.Name)
		if err != nil {
			return err
		}
		if m != nil {
			err = writeMatrix(w, t.Name, m)
		} else {
			err = writeRaw(w, b, t.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRaw copies a raw tensor, widened where dequantTensors planned F32
// (only ever exactly: it never plans a narrower dtype).
func writeRaw(w *checkpoint.Writer, b *bundle.Bundle, name string) error {
	info, data, err := b.Raw(name)
	if err != nil {
		return err
	}
	return w.WriteConverted(info.DType, data)
}

// writeMatrix materializes W = (Ŵ' + A·B)·Mᵀ and writes it.
func writeMatrix(w *checkpoint.Writer, name string, m *lut.Matrix) error {
	out, in := m.Dims()
	dense := tensor.New(out, in)
	m.Dequantize(dense)
	if r := m.Parts().Rotation; r != nil {
		h, ok := r.(*lut.Hadamard)
		if !ok {
			return fmt.Errorf("matrix %q: rotation %T cannot be folded back (only lut.Hadamard)", name, r)
		}
		h.UnrotateWeights(dense)
	}
	return w.WriteFloat32(dense.Data[:out*in])
}
