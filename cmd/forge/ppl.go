package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"forge"
	"forge/internal/progress"
)

// PPLCmd is `forge ppl`.
type PPLCmd struct {
	Model string `required:"" type:"existingdir" help:"Checkpoint or bundle directory."`
	Data  string `required:"" placeholder:"FILE[:ROWS]" help:"Text (.txt), chat (.jsonl) or token rows (.json, .npy); :ROWS scores ROWS windows sampled with --seed."`
	Ctx   int    `default:"512" help:"Tokens per window; each window runs from an empty state."`
	Seed  uint64 `default:"0" help:"Seed for sampling FILE:ROWS windows."`
	JSON  bool   `name:"json" help:"Print JSON."`
}

func (c *PPLCmd) Run(ctx context.Context) error {
	if err := positive("--ctx", c.Ctx); err != nil {
		return err
	}
	rep, err := forge.PPL(ctx, forge.PPLConfig{Model: c.Model, Data: c.Data, Ctx: c.Ctx, Seed: c.Seed,
		Progress: progress.New("ppl", false).Set})
	if err != nil {
		return err
	}
	if c.JSON {
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", "  ")
		return e.Encode(rep)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", rep.Model)
	fmt.Fprintf(tw, "data\t%s (%d windows of %d tokens)\n", rep.Data, rep.Windows, rep.Ctx)
	fmt.Fprintf(tw, "tokens scored\t%d\n", rep.Scored)
	fmt.Fprintf(tw, "mean NLL\t%.4f nats\n", rep.MeanNLL)
	fmt.Fprintf(tw, "perplexity\t%.4f\n", rep.PPL)
	fmt.Fprintf(tw, "speed\t%.0f tokens/s (%.1f s)\n", rep.TokensPerSec, rep.Seconds)
	return tw.Flush()
}
