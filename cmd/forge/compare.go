package main

import (
	"context"
	"os"

	"forge"
)

// CompareCmd is `forge eval compare A.json B.json …`.
type CompareCmd struct {
	Reports   []string `arg:"" type:"existingfile" help:"Reports written by forge eval --json."`
	KL        []string `name:"kl" help:"Per-position KL files (forge eval --kl-out), comma-separated or repeated, one per report in order."`
	OutDir    string   `name:"out-dir" help:"Directory for compare.md and the plots (default: the first report's)."`
	Parts     bool     `help:"Require the ablation chart (reports from forge eval ablation)."`
	Overwrite bool     `help:"Replace compare.md and plots that forge wrote earlier."`
}

func (c *CompareCmd) Run(ctx context.Context) error {
	_, err := forge.Compare(ctx, forge.CompareConfig{Reports: c.Reports, KL: trimEach(c.KL), OutDir: c.OutDir, Parts: c.Parts,
		Overwrite: c.Overwrite, Out: os.Stdout})
	return err
}
