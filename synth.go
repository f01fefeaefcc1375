package forge

import (
	"context"
	"fmt"

	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/outpath"
)

// SynthConfig configures Synth.
type SynthConfig struct {
	Config string // HF config.json of the model to synthesise
	Out    string // output directory (must not exist)
	Seed   uint64
	// Progress, if set, is called with bytes written and total.
	Progress func(done, total int64)
}

// Synth writes a random-init checkpoint of any size in the real Hugging
// Face layout for the config (checkpoint.Synth): for benchmarks at the
// shapes of real models.
func Synth(ctx context.Context, cfg SynthConfig) error {
	if err := outpath.Disjoint([]string{cfg.Out}, []string{cfg.Config}); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	raw, err := budget.ReadFile(cfg.Config, budget.MaxConfigFile)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return checkpoint.Synth(ctx, raw, cfg.Out, checkpoint.SynthOptions{Seed: cfg.Seed, Version: Version, Progress: cfg.Progress})
}
