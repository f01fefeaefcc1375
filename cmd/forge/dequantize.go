package main

import (
	"context"
	"fmt"

	"forge"
	"forge/internal/progress"
)

// DequantizeCmd is `forge dequantize --model BUNDLE --out DIR` (or
// `forge dequantize BUNDLE --out DIR`).
type DequantizeCmd struct {
	Model     string `help:"Bundle directory (forge quantize's output)."`
	Bundle    string `arg:"" optional:"" name:"bundle" help:"The same, given as an argument."`
	Out       string `required:"" help:"Hugging Face checkpoint directory to create."`
	DType     string `name:"dtype" default:"${dequant_dtype}" enum:"bf16,f32" help:"Dtype of the materialized matrices: bf16 or f32 (raw tensors are widened to it only when exact, else kept as stored)."`
	ShardSize string `name:"shard-size" default:"${dequant_shard}" help:"Tensor bytes per shard, e.g. 4GiB, 500MB or 1000000 (one model.safetensors when everything fits)."`
	Overwrite bool   `help:"Replace an existing checkpoint at --out."`
}

func (c *DequantizeCmd) Run(ctx context.Context) error {
	bundle, err := modelDir(c.Model, c.Bundle)
	if err != nil {
		return err
	}
	shard, err := parseSize(c.ShardSize)
	if err != nil {
		return fmt.Errorf("--shard-size: %w", err)
	}
	err = forge.Dequantize(ctx, forge.DequantizeConfig{
		Bundle: bundle, Out: c.Out, DType: c.DType, ShardSize: shard, Overwrite: c.Overwrite,
		Progress: progress.New("dequantize", true).Set,
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", c.Out)
	return nil
}
