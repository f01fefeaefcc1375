package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"forge"
	"forge/internal/progress"
)

// TraceCmd is `forge trace`.
type TraceCmd struct {
	Model     string   `required:"" type:"existingdir" help:"Reference: Hugging Face checkpoint or bundle directory."`
	Data      []string `required:"" placeholder:"FILE[:ROWS]" sep:"none" help:"Token source, repeatable: .txt text, .jsonl chat, .json/.npy token rows; ROWS rows sampled with --seed (tokenized as calibration is). With --lcpp: one text file, read whole."`
	Out       string   `required:"" help:"Trace file to write (safetensors; with --lcpp --llamacpp, llama.cpp's base layout)."`
	Seq       int      `default:"512" help:"Tokens per row."`
	TopK      int      `name:"topk" default:"0" help:"Store the top-K log-probs and the tail mass per position (0: the full log-softmax)."`
	Seed      uint64   `default:"0" help:"Seed for row sampling."`
	LCPP      bool     `name:"lcpp" help:"llama.cpp --kl-divergence-base compatible base: windows of --ctx tokens, second half scored, logits as uint16."`
	Ctx       int      `default:"512" help:"Window length n_ctx for --lcpp."`
	LlamaCpp  bool     `name:"llamacpp" help:"With --lcpp: write llama.cpp's own binary base layout."`
	Overwrite bool     `help:"Replace an existing trace that forge wrote."`
}

func (c *TraceCmd) Run(ctx context.Context) error {
	if err := positive("--seq", c.Seq, "--ctx", c.Ctx); err != nil {
		return err
	}
	if c.TopK < 0 {
		return fmt.Errorf("--topk %d: want 0 (full distributions) or a positive K", c.TopK)
	}
	if c.LCPP {
		if len(c.Data) != 1 {
			return fmt.Errorf("--lcpp takes one text file in --data, got %d", len(c.Data))
		}
		err := forge.TraceLCPP(ctx, forge.LCPPTraceConfig{Model: c.Model, Data: c.Data[0], Out: c.Out, Ctx: c.Ctx,
			LlamaCpp: c.LlamaCpp, Overwrite: c.Overwrite, Progress: progress.New("trace", false).Set})
		if err == nil {
			fmt.Printf("wrote %s\n", c.Out)
		}
		return err
	}
	if c.LlamaCpp {
		return fmt.Errorf("--llamacpp needs --lcpp")
	}
	rep, err := forge.Trace(ctx, forge.TraceConfig{
		Model: c.Model, Data: c.Data, Out: c.Out, Seq: c.Seq, TopK: c.TopK, Seed: c.Seed, Overwrite: c.Overwrite,
		Progress: progress.New("trace", false).Set,
	})
	if err != nil {
		return err
	}
	m := rep.Meta
	fmt.Printf("wrote %s: %s, %d rows, %d positions, vocab %d; %d tokens in %.1f s (%.0f tokens/s)\n",
		rep.Out, m.Definition, m.Rows, m.Positions, m.Vocab, rep.Tokens, rep.Seconds, float64(rep.Tokens)/rep.Seconds)
	return nil
}

// EvalGroup is `forge eval`: scoring (the default) and `forge eval compare`.
type EvalGroup struct {
	Score   EvalCmd    `cmd:"" default:"withargs" help:"Score a candidate against a reference trace (the default: forge eval --trace T --model M)."`
	Compare CompareCmd `cmd:"" help:"Set evaluation reports side by side, with KL plots (PNG and SVG)."`
}

// EvalCmd is `forge eval --trace T --model M`.
type EvalCmd struct {
	Trace     string `required:"" type:"existingfile" help:"Reference trace written by forge trace."`
	Model     string `required:"" type:"existingdir" help:"Candidate: bundle or Hugging Face checkpoint directory."`
	JSON      string `name:"json" placeholder:"OUT.json" help:"Also write the report as JSON."`
	KLOut     string `name:"kl-out" placeholder:"KL.npy" help:"Write the per-position KL as a float32 .npy."`
	Markdown  string `placeholder:"OUT.md" help:"Also write the report as a Markdown table."`
	Reference string `type:"existingdir" help:"Ablation: evaluate this reference model with only --parts of --layers taken from --model."`
	Parts     string `help:"Ablation parts, comma-separated: mlp,gdn,attn,kv,head (default all)."`
	Layers    string `help:"Ablation layers: LO-HI or one layer (default all)."`
	LCPP      bool   `name:"lcpp" help:"The trace is a llama.cpp-compatible base (forge trace --lcpp, or llama-perplexity --kl-divergence-base): print llama.cpp's statistics."`
	Ctx       int    `help:"With --lcpp: the n_ctx the base must have (0: whatever it has)."`
	Overwrite bool   `help:"Replace existing report files that forge wrote."`
}

func (c *EvalCmd) Run(ctx context.Context) error {
	if c.LCPP {
		if c.Reference != "" || c.KLOut != "" || c.Markdown != "" {
			return fmt.Errorf("--lcpp prints llama.cpp's report: --reference, --kl-out and --markdown do not apply")
		}
		if c.Ctx < 0 {
			return fmt.Errorf("--ctx %d: want > 0 (or 0: whatever the base has)", c.Ctx)
		}
		_, err := forge.EvalLCPP(ctx, forge.LCPPEvalConfig{Trace: c.Trace, Model: c.Model, Ctx: c.Ctx, Out: os.Stdout,
			JSON: c.JSON, Overwrite: c.Overwrite, Progress: progress.New("eval", false).Set})
		return err
	}
	if c.Reference == "" && (c.Parts != "" || c.Layers != "") {
		return fmt.Errorf("--parts and --layers select an ablation: give --reference too")
	}
	rep, err := forge.Evaluate(ctx, forge.EvalConfig{
		Trace: c.Trace, Model: c.Model, JSON: c.JSON, KLOut: c.KLOut, Markdown: c.Markdown,
		Reference: c.Reference, Parts: c.Parts, Layers: c.Layers, Overwrite: c.Overwrite,
		Progress: progress.New("eval", false).Set,
		Log:      func(line string) { fmt.Fprintln(os.Stderr, line) },
	})
	if err != nil {
		return err
	}
	return rep.WriteTable(os.Stdout)
}

// CompareCmd is `forge eval compare A.json B.json …`.
type CompareCmd struct {
	Reports   []string `arg:"" type:"existingfile" help:"Reports written by forge eval --json."`
	KL        string   `name:"kl" help:"Per-position KL files (forge eval --kl-out), comma-separated, one per report in order."`
	OutDir    string   `name:"out-dir" help:"Directory for compare.md and the plots (default: the first report's)."`
	Parts     bool     `help:"Require the ablation chart (reports from forge eval --reference)."`
	Overwrite bool     `help:"Replace compare.md and plots that forge wrote earlier."`
}

func (c *CompareCmd) Run(ctx context.Context) error {
	var kl []string
	if c.KL != "" {
		kl = strings.Split(c.KL, ",")
	}
	_, err := forge.Compare(ctx, forge.CompareConfig{Reports: c.Reports, KL: kl, OutDir: c.OutDir, Parts: c.Parts,
		Overwrite: c.Overwrite, Out: os.Stdout})
	return err
}

// Help shows the default command's usage under `forge eval --help`, where
// kong lists only the subcommands.
func (*EvalGroup) Help() string {
	return `Scoring is the default command: forge eval --trace T --model M is forge eval score.

  forge eval --trace TRACE --model CANDIDATE [--json OUT.json] [--kl-out KL.npy] [--markdown OUT.md]
  forge eval --trace TRACE --model BUNDLE --reference REF --parts mlp --layers 4-7     (ablation)
  forge eval --lcpp --trace BASE --model CANDIDATE                                   (llama.cpp's statistics)
  forge eval compare A.json B.json --kl a.npy,b.npy --out-dir DIR

Run 'forge eval score --help' for every scoring flag.`
}
