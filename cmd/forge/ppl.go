package main

import (
	"context"
	"fmt"
	"os"

	"forge"
	"forge/internal/progress"
	"forge/internal/table"
)

// PPLCmd is `forge ppl`.
type PPLCmd struct {
	Model string `required:"" type:"existingdir" help:"Checkpoint or bundle directory."`
	Data  string `required:"" placeholder:"FILE[:ROWS]" help:"Text (.txt), chat (.jsonl) or token rows (.json, .npy); :ROWS scores ROWS windows sampled with --seed."`
	Ctx   int    `default:"${ppl_ctx}" help:"Tokens per window; each window runs from an empty state."`
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
		return printJSON(rep)
	}
	t := &table.Table{}
	t.Row("model", rep.Model)
	t.Row("data", fmt.Sprintf("%s (%d windows of %d tokens)", rep.Data, rep.Windows, rep.Ctx))
	t.Row("tokens scored", rep.Scored)
	t.Row("mean NLL", fmt.Sprintf("%.4f nats", rep.MeanNLL))
	t.Row("perplexity", fmt.Sprintf("%.4f", rep.PPL))
	t.Row("speed", fmt.Sprintf("%.0f tokens/s (%.1f s)", rep.TokensPerSec, rep.Seconds))
	return t.Write(os.Stdout)
}
