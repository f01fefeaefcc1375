package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"forge"
	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/progress"
	"forge/tokenizer"
)

// InspectCmd is `forge inspect MODEL_DIR`.
type InspectCmd struct {
	Model string `arg:"" type:"existingdir" help:"Checkpoint or bundle directory."`
	JSON  bool   `name:"json" help:"Print JSON instead of a table."`
}

func (c *InspectCmd) Run() error {
	in, err := forge.Inspect(c.Model)
	if err != nil {
		return err
	}
	if c.JSON {
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", "  ")
		return e.Encode(in)
	}
	return in.WriteTable(os.Stdout)
}

// LogitsCmd is `forge logits`.
type LogitsCmd struct {
	Model     string `required:"" type:"existingdir" help:"Checkpoint or bundle directory."`
	Tokens    string `required:"" type:"existingfile" help:"JSON list of token ids, or a list of such lists."`
	Out       string `required:"" help:"Output .safetensors file."`
	Decode    bool   `help:"Compute one token at a time (recurrent form) instead of chunked prefill."`
	Overwrite bool   `help:"Replace an existing logits file that forge wrote."`
}

func (c *LogitsCmd) Run(ctx context.Context) error {
	rep, err := forge.Logits(ctx, forge.LogitsConfig{Model: c.Model, Tokens: c.Tokens, Out: c.Out, Decode: c.Decode,
		Overwrite: c.Overwrite, Progress: progress.New("logits", false).Set})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s, vocab %d)\n", rep.Out, rep.Mode, rep.Vocab)
	tok, _ := tokenizer.Load(c.Model) // only to show the next token's text; optional
	for i, s := range rep.Sequences {
		text := ""
		if tok != nil {
			if t, err := tok.Decode([]int{s.NextID}); err == nil {
				text = fmt.Sprintf(" %q", t)
			}
		}
		fmt.Printf("  sequence %d: %d tokens in %.3f s (%.0f tokens/s); most likely next token %d%s (p = %.3f)\n",
			i, s.Tokens, s.Seconds, float64(s.Tokens)/s.Seconds, s.NextID, text, s.NextP)
	}
	return nil
}

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
