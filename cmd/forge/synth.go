package main

import (
	"context"

	"forge"
	"forge/internal/progress"
)

// SynthCmd is `forge synth`.
type SynthCmd struct {
	Config string `required:"" type:"existingfile" help:"HF config.json of the model to synthesise."`
	Out    string `required:"" help:"Output directory (must not exist)."`
	Seed   uint64 `default:"0" help:"Random seed."`
}

func (c *SynthCmd) Run(ctx context.Context) error {
	return forge.Synth(ctx, forge.SynthConfig{Config: c.Config, Out: c.Out, Seed: c.Seed, Progress: progress.New("synth", true).Set})
}
