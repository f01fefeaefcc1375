package main

import (
	"context"
	"fmt"
	"os"

	"forge"
	"forge/internal/progress"
)

// ExportCmd is `forge export --model BUNDLE --layout reference --out DIR`
// (or `forge export BUNDLE --out DIR`).
type ExportCmd struct {
	Model     string `help:"Bundle directory (forge quantize's output)."`
	Bundle    string `arg:"" optional:"" name:"bundle" help:"The same, given as an argument."`
	Layout    string `default:"reference" enum:"reference" help:"Layout to write: reference (the reference ANE builder's layer_XX.safetensors, layer_XX_mixer.safetensors, lm_head.safetensors; docs/ane.md §3)."`
	Out       string `required:"" help:"Directory to create."`
	Overwrite bool   `help:"Replace an existing export at --out that forge wrote."`
}

func (c *ExportCmd) Run(ctx context.Context) error {
	bundle, err := modelDir(c.Model, c.Bundle)
	if err != nil {
		return err
	}
	rep, err := forge.Export(ctx, forge.ExportConfig{Model: bundle, Layout: c.Layout, Out: c.Out, Overwrite: c.Overwrite,
		Progress: progress.New("export", true).Set})
	if err != nil {
		return err
	}
	fmt.Println(rep)
	if n := len(rep.Unexported); n > 0 {
		fmt.Printf("%d matrices are unquantized in the bundle and left to the checkpoint (the reference reads them there)\n", n)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(os.Stderr, "forge: warning:", w)
	}
	return nil
}
