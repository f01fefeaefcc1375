package main

import (
	"context"
	"fmt"

	"forge"
	"forge/internal/progress"
	"forge/tokenizer"
)

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
