package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"forge"
	"forge/internal/progress"
)

// DequantizeCmd is `forge dequantize BUNDLE --out DIR`.
type DequantizeCmd struct {
	Bundle    string `arg:"" help:"Bundle directory (forge quantize's output)."`
	Out       string `required:"" help:"Hugging Face checkpoint directory to create."`
	DType     string `name:"dtype" default:"bf16" enum:"bf16,f32" help:"Dtype of the materialized matrices: bf16 or f32 (raw tensors are widened to it only when exact, else kept as stored)."`
	ShardSize string `name:"shard-size" default:"4GiB" help:"Tensor bytes per shard, e.g. 4GiB, 500MB or 1000000 (one model.safetensors when everything fits)."`
	Overwrite bool   `help:"Replace an existing checkpoint at --out."`
}

func (c *DequantizeCmd) Run(ctx context.Context) error {
	shard, err := parseSize(c.ShardSize)
	if err != nil {
		return fmt.Errorf("--shard-size: %w", err)
	}
	err = forge.Dequantize(ctx, forge.DequantizeConfig{
		Bundle: c.Bundle, Out: c.Out, DType: c.DType, ShardSize: shard, Overwrite: c.Overwrite,
		Progress: progress.New("dequantize", true).Set,
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", c.Out)
	return nil
}

// sizeUnits are the suffixes parseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// parseSize reads a positive byte count: digits with an optional unit
// (B, KB, MB, GB powers of 1000; KiB, MiB, GiB powers of 1024).
func parseSize(s string) (int64, error) {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(n), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q: want a positive size such as 4GiB, 500MB or 1000000", s)
	}
	return n * unit, nil
}
