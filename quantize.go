package forge

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"forge/bundle"
	"forge/checkpoint"
	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/tensor"
)

// QuantizeConfig configures Quantize. The zero Method is "rtn".
type QuantizeConfig struct {
	Model     string // HF checkpoint directory
	Out       string // bundle directory to create
	Format    string // format of every quantizable matrix, e.g. "LUT4 per-tensor + pcs"
	Method    string // "rtn" (nearest rounding); GPTQ comes later
	Seed      uint64
	Overwrite bool
	ShardSize int64
	// Progress, if set, is called after each tensor with tensors done and total.
	Progress func(done, total int64)
}

// Quantizable reports whether a tensor is quantized by forge quantize: the
// MLP, the DeltaNet projections in_proj_qkv / in_proj_z / out_proj, the
// attention q/k/v/o projections and the head. Embeddings, norms, conv taps,
// A_log, dt_bias and the small in_proj_a / in_proj_b stay float.
func Quantizable(s model.TensorSpec) bool {
	if !s.Matrix {
		return false
	}
	switch s.Part {
	case model.PartMLP, model.PartAttn, model.PartHead:
		return true
	case model.PartDeltaNet:
		n := s.Name
		return !strings.HasSuffix(n, "in_proj_a.weight") && !strings.HasSuffix(n, "in_proj_b.weight")
	}
	return false
}

// Quantize writes a bundle of cfg.Model with every quantizable matrix in
// cfg.Format, the rest copied in its source dtype. The bundle is complete
// and verified or absent: see package bundle.
func Quantize(ctx context.Context, cfg QuantizeConfig) error {
	if cfg.Method != "" && cfg.Method != "rtn" {
		return fmt.Errorf("quantize: method %q is not supported (rtn)", cfg.Method)
	}
	f, err := lut.ParseFormat(cfg.Format)
	if err != nil {
		return fmt.Errorf("quantize: --format: %w", err)
	}
	ck, err := checkpoint.Open(cfg.Model)
	if err != nil {
		return err
	}
	defer ck.Close()
	infos := ck.Tensors()
	items := make([]bundle.Item, len(infos))
	for i, t := range infos {
		items[i] = bundle.Item{Name: t.Spec.Name, Shape: t.Spec.Shape, DType: t.DType, Matrix: t.Spec.Matrix}
		if Quantizable(t.Spec) {
			if err := f.CheckShape(t.Spec.Shape[0], t.Spec.Shape[1]); err != nil {
				return fmt.Errorf("quantize: %s cannot hold %s %v: %w", f, t.Spec.Name, t.Spec.Shape, err)
			}
			items[i].Format = f
		}
	}
	fp, err := ck.Fingerprint()
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(cfg.Model)
	w, err := bundle.Create(cfg.Out, items, bundle.WriteOptions{
		ShardSize: cfg.ShardSize, Overwrite: cfg.Overwrite, SourceDir: cfg.Model,
		Manifest: bundle.Manifest{
			ForgeVersion: Version,
			Source:       bundle.SourceInfo{Path: abs, Fingerprint: fp},
			Quant:        bundle.QuantInfo{Method: "rtn", Seed: cfg.Seed, Format: f.String()},
		},
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := quantizeItem(ck, w, it, cfg.Seed+uint64(i)); err != nil {
			return err
		}
		if cfg.Progress != nil {
			cfg.Progress(int64(i+1), int64(len(items)))
		}
	}
	return w.Close()
}

// quantizeItem writes one tensor: quantized through RTN, or copied raw.
func quantizeItem(ck *checkpoint.Checkpoint, w *bundle.Writer, it bundle.Item, seed uint64) error {
	if it.Format.Kind == 0 {
		raw, err := ck.Raw(it.Name)
		if err != nil {
			return err
		}
		return w.Raw(it.Name, raw)
	}
	v, err := ck.Vector(it.Name)
	if err != nil {
		return err
	}
	q, err := quant.RTN(tensor.FromSlice(it.Shape[0], it.Shape[1], v), it.Format, quant.Options{Seed: seed})
	if err != nil {
		return fmt.Errorf("quantize %s: %w", it.Name, err)
	}
	return w.Matrix(it.Name, q)
}
