package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"forge"
	"forge/internal/progress"
	"forge/model"
)

// EvalGroup is `forge eval`: scoring (the default), ablations, the
// llama.cpp-compatible mode and comparisons of reports.
type EvalGroup struct {
	Score    EvalCmd     `cmd:"" default:"withargs" help:"Score a candidate against a reference trace (the default: forge eval --trace T --model M)."`
	Ablation AblationCmd `cmd:"" help:"Score the reference with only some parts and layers taken from a quantized candidate."`
	LCPP     EvalLCPPCmd `cmd:"" name:"lcpp" help:"Score a candidate against a llama.cpp-compatible base and print llama.cpp's statistics."`
	Compare  CompareCmd  `cmd:"" help:"Set evaluation reports side by side, with KL plots (PNG and SVG)."`
}

// Help shows the subcommands' usage under `forge eval --help`, where kong
// lists them only by name.
func (*EvalGroup) Help() string {
	return `Scoring is the default command: forge eval --trace T --model M is forge eval score.

  forge eval --trace TRACE --model CANDIDATE [--json OUT.json] [--kl-out KL.npy] [--markdown OUT.md]
  forge eval ablation --trace TRACE --reference REF --model BUNDLE --parts mlp --layers 4-7
  forge eval lcpp --trace BASE --model CANDIDATE
  forge eval compare A.json B.json --kl a.npy,b.npy --out-dir DIR

Run 'forge eval score --help' (or ablation, lcpp, compare) for every flag.`
}

// reportFlags are the outputs of a scoring command.
type reportFlags struct {
	JSON      string `name:"json" placeholder:"OUT.json" help:"Also write the report as JSON."`
	KLOut     string `name:"kl-out" placeholder:"KL.npy" help:"Write the per-position KL as a float32 .npy."`
	Markdown  string `placeholder:"OUT.md" help:"Also write the report as a Markdown table."`
	Overwrite bool   `help:"Replace existing report files that forge wrote."`
	KV        string `name:"kv" default:"f32" enum:"f32,int8" help:"The candidate's KV cache: f32, or int8 (keys fp16, values int8 with a scale per token and head) to measure what it costs."`
	Act       string `name:"act" default:"f32" enum:"f32,int8" help:"The candidate's activations: f32, or int8 (every row with the int8 activations decode uses where the CPU has int8 kernels) to measure what they cost."`
}

// EvalCmd is `forge eval --trace T --model M`.
type EvalCmd struct {
	Trace string `required:"" type:"existingfile" help:"Reference trace written by forge trace."`
	Model string `required:"" type:"existingdir" help:"Candidate: bundle or Hugging Face checkpoint directory."`
	reportFlags
}

func (c *EvalCmd) Run(ctx context.Context) error {
	return evaluate(ctx, forge.EvalConfig{Trace: c.Trace, Model: c.Model}, c.reportFlags)
}

// AblationCmd is `forge eval ablation --trace T --reference R --model B`.
type AblationCmd struct {
	Trace     string   `required:"" type:"existingfile" help:"Reference trace written by forge trace."`
	Reference string   `required:"" type:"existingdir" help:"The reference model (a Hugging Face checkpoint) the ablation starts from."`
	Model     string   `required:"" type:"existingdir" help:"The quantized candidate (a bundle) the selected matrices are taken from."`
	Parts     []string `help:"Parts taken from the candidate, comma-separated or repeated: mlp, gdn, attn, kv, head (default all)."`
	Layers    string   `placeholder:"LO-HI" help:"Layers taken from the candidate: LO-HI or one layer (default all)."`
	reportFlags
}

func (c *AblationCmd) Run(ctx context.Context) error {
	return evaluate(ctx, forge.EvalConfig{Trace: c.Trace, Model: c.Model, Reference: c.Reference,
		Parts: strings.Join(trimList(c.Parts), ","), Layers: c.Layers}, c.reportFlags)
}

func evaluate(ctx context.Context, cfg forge.EvalConfig, out reportFlags) error {
	cfg.JSON, cfg.KLOut, cfg.Markdown, cfg.Overwrite = out.JSON, out.KLOut, out.Markdown, out.Overwrite
	cfg.KV, _ = model.ParseKV(out.KV)    // kong checked the enum
	cfg.Act, _ = model.ParseAct(out.Act) // and this one
	cfg.Progress = progress.New("eval", false).Set
	cfg.Log = func(line string) { fmt.Fprintln(os.Stderr, line) }
	rep, err := forge.Evaluate(ctx, cfg)
	if err != nil {
		return err
	}
	return rep.WriteTable(os.Stdout)
}

// EvalLCPPCmd is `forge eval lcpp --trace BASE --model M`.
type EvalLCPPCmd struct {
	Trace     string `required:"" type:"existingfile" help:"Base written by forge trace lcpp, or by llama-perplexity --kl-divergence-base."`
	Model     string `required:"" type:"existingdir" help:"Candidate: bundle or Hugging Face checkpoint directory."`
	Ctx       int    `help:"The n_ctx the base must have (0: whatever it has)."`
	JSON      string `name:"json" placeholder:"OUT.json" help:"Also write the report as JSON."`
	Overwrite bool   `help:"Replace an existing report that forge wrote."`
}

func (c *EvalLCPPCmd) Run(ctx context.Context) error {
	if c.Ctx < 0 {
		return fmt.Errorf("--ctx %d: want > 0 (or 0: whatever the base has)", c.Ctx)
	}
	_, err := forge.EvalLCPP(ctx, forge.LCPPEvalConfig{Trace: c.Trace, Model: c.Model, Ctx: c.Ctx, Out: os.Stdout,
		JSON: c.JSON, Overwrite: c.Overwrite, Progress: progress.New("eval", false).Set})
	return err
}
