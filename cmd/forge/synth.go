package main

import (
	"context"

	"forge"
	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/progress"
)

// SynthCmd is `forge synth`.
type SynthCmd struct {
	Config string `required:"" type:"existingfile" help:"HF config.json of the model to synthesise."`
	Out    string `required:"" help:"Output directory (must not exist)."`
	Seed   uint64 `default:"0" help:"Random seed."`
}

func (c *SynthCmd) Run(ctx context.Context) error {
	raw, err := budget.ReadFile(c.Config, budget.MaxConfigFile)
	if err != nil {
		return err
	}
	opt := checkpoint.SynthOptions{Seed: c.Seed, Version: forge.Version, Progress: progress.New("synth", true).Set}
	return checkpoint.Synth(ctx, raw, c.Out, opt)
}
