package forge

import (
	"errors"
	"fmt"

	"forge/ane/chunk"
	"forge/bundle"
	"forge/checkpoint"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/source"
)

// ANEPlanConfig configures ANEPlan. The zero Options are the reference's
// layout (chunk.Options).
type ANEPlanConfig struct {
	Model     string // bundle or checkpoint directory
	JSON      string // optional: the plan as JSON
	Overwrite bool   // replace a JSON file forge wrote earlier
	Options   chunk.Options
}

// ANEPlan plans the model in cfg.Model for Apple's Neural Engine
// (package ane/chunk): chunks of consecutive layers and a head chunk, each
// matrix's placement, weight, state and KV bytes, and the projected time
// of a step per context entry. A bundle's matrices are taken as its
// manifest records them (format, rank, bytes); a checkpoint's are all
// float and run as fp16. With cfg.JSON the plan is also written there.
func ANEPlan(cfg ANEPlanConfig) (*chunk.Plan, error) {
	if cfg.Model == "" {
		return nil, errors.New("ane plan: a model directory is required")
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Model}, outpath.Target{Path: cfg.JSON, Owned: outpath.ForgeJSON}); err != nil {
		return nil, fmt.Errorf("ane plan: %w", err)
	}
	src, err := source.Open(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("ane plan: %w", err)
	}
	defer src.Close()
	c, err := src.Config()
	if err != nil {
		return nil, fmt.Errorf("ane plan: %s: %w", cfg.Model, err)
	}
	ws, kind, err := aneWeights(src, &c)
	if err != nil {
		return nil, fmt.Errorf("ane plan: %s: %w", cfg.Model, err)
	}
	p, err := chunk.New(&c, ws, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("ane plan: %s: %w", cfg.Model, err)
	}
	p.Model, p.Kind = cfg.Model, kind
	if cfg.JSON != "" {
		raw, err := versionedJSON(p)
		if err != nil {
			return nil, fmt.Errorf("ane plan: %w", err)
		}
		if err := durable.WriteFile(cfg.JSON, raw); err != nil {
			return nil, fmt.Errorf("ane plan: %w", err)
		}
	}
	return p, nil
}

// aneWeights lists the model's matrices as stored: a bundle's manifest
// entries (a raw one is a float matrix), or a checkpoint's tensors.
func aneWeights(src model.Source, c *model.Config) ([]chunk.Weight, string, error) {
	var ws []chunk.Weight
	switch s := src.(type) {
	case *bundle.Bundle:
		for _, spec := range model.Tensors(c) {
			if !spec.Matrix {
				continue
			}
			e, ok := s.Entry(spec.Name)
			if !ok {
				return nil, "", fmt.Errorf("%s lists no matrix %q", bundle.ManifestName, spec.Name)
			}
			w, err := chunk.FloatWeight(e.Name, e.Format, e.Shape[0], e.Shape[1])
			if !e.Raw {
				var f lut.Format
				f, err = lut.ParseFormat(e.Format)
				w = chunk.Weight{Name: e.Name, Format: f, Rank: e.Rank, Bytes: e.Bytes}
			}
			if err != nil {
				return nil, "", fmt.Errorf("matrix %q: %w", e.Name, err)
			}
			ws = append(ws, w)
		}
		return ws, "bundle", nil
	case *checkpoint.Checkpoint:
		for _, t := range s.Tensors() {
			if !t.Spec.Matrix {
				continue
			}
			w, err := chunk.FloatWeight(t.Spec.Name, t.DType.String(), t.Spec.Shape[0], t.Spec.Shape[1])
			if err != nil {
				return nil, "", err
			}
			ws = append(ws, w)
		}
		return ws, "checkpoint", nil
	}
	return nil, "", fmt.Errorf("a %T is neither a bundle nor a checkpoint", src)
}
