package main

import (
	"context"
	"fmt"

	"forge"
	"forge/internal/progress"
)

// TraceGroup is `forge trace`: a reference trace (the default) or a
// llama.cpp-compatible base (`forge trace lcpp`).
type TraceGroup struct {
	Record TraceCmd     `cmd:"" default:"withargs" help:"Record the reference's next-token distributions over token rows (the default: forge trace --model M --data F --out T, or --generate PROMPTS.jsonl: over the reference's answers)."`
	LCPP   TraceLCPPCmd `cmd:"" name:"lcpp" help:"Record a llama.cpp --kl-divergence-base compatible base: windows of --ctx tokens, second half scored, logits as uint16."`
}

// TraceCmd is `forge trace --model M --data FILE[:ROWS] --out T`.
type TraceCmd struct {
	Model     string   `required:"" type:"existingdir" help:"Reference: Hugging Face checkpoint or bundle directory."`
	Data      []string `required:"" xor:"rows" placeholder:"FILE[:ROWS]" help:"Token sources, comma-separated or repeated: .txt text, .jsonl chat, .json/.npy token rows; ROWS rows sampled with --seed."`
	Generate  string   `required:"" xor:"rows" type:"existingfile" placeholder:"PROMPTS.jsonl" help:"Instead of --data: the reference answers these chat prompts (thinking on, the reference's calibration sampling, seed --seed) and the rows are prompts and answers."`
	Out       string   `required:"" help:"Trace file to write (safetensors)."`
	Ctx       int      `default:"${trace_ctx}" aliases:"seq" help:"Tokens per row."`
	TopK      int      `name:"topk" default:"0" help:"Store the top-K log-probs and the tail mass per position (0: the full log-softmax)."`
	Seed      uint64   `default:"0" help:"Seed for row sampling (--data) or of the answers (--generate)."`
	Overwrite bool     `help:"Replace an existing trace that forge wrote."`
	GenDataFlags
}

func (c *TraceCmd) Run(ctx context.Context) error {
	if err := positive("--ctx", c.Ctx); err != nil {
		return err
	}
	if c.TopK < 0 {
		return fmt.Errorf("--topk %d: want 0 (full distributions) or a positive K", c.TopK)
	}
	if f := c.given(); f != "" && c.Generate == "" {
		return fmt.Errorf("%s applies to --generate only", f)
	}
	o, err := c.options(c.Seed)
	if err != nil {
		return err
	}
	rep, err := forge.Trace(ctx, forge.TraceConfig{
		Model: c.Model, Data: trimList(c.Data), Generate: c.Generate, Gen: o,
		Out: c.Out, Seq: c.Ctx, TopK: c.TopK, Seed: c.Seed, Overwrite: c.Overwrite,
		Progress: progress.New("trace", false).Set, GenerateProgress: progress.New("generate", false).Set,
	})
	if err != nil {
		return err
	}
	m := rep.Meta
	if g := rep.Generation; g != nil {
		fmt.Printf("generated %d answers to %s: %d ended at EOS, %d at %d tokens; %d tokens after the last row dropped\n",
			g.PromptCount, g.Prompts, g.AnswersEOS, g.AnswersMax, g.MaxTokens, g.Dropped)
	}
	fmt.Printf("wrote %s: %s, %d rows, %d positions, vocab %d; %d tokens in %.1f s (%.0f tokens/s)\n",
		rep.Out, m.Definition, m.Rows, m.Positions, m.Vocab, rep.Tokens, rep.Seconds, float64(rep.Tokens)/rep.Seconds)
	return nil
}

// TraceLCPPCmd is `forge trace lcpp --model M --data TEXT --out BASE`.
type TraceLCPPCmd struct {
	Model     string `required:"" type:"existingdir" help:"Base model: Hugging Face checkpoint or bundle directory."`
	Data      string `required:"" type:"existingfile" help:"One text file, read whole and tokenized once."`
	Out       string `required:"" help:"Base file to write (forge's safetensors layout, or llama.cpp's with --llamacpp)."`
	Ctx       int    `default:"${lcpp_ctx}" aliases:"seq" help:"Window length n_ctx."`
	LlamaCpp  bool   `name:"llamacpp" help:"Write llama.cpp's own binary --kl-divergence-base layout."`
	Overwrite bool   `help:"Replace an existing base that forge wrote."`
}

func (c *TraceLCPPCmd) Run(ctx context.Context) error {
	if err := positive("--ctx", c.Ctx); err != nil {
		return err
	}
	err := forge.TraceLCPP(ctx, forge.LCPPTraceConfig{Model: c.Model, Data: c.Data, Out: c.Out, Ctx: c.Ctx,
		LlamaCpp: c.LlamaCpp, Overwrite: c.Overwrite, Progress: progress.New("trace", false).Set})
	if err == nil {
		fmt.Printf("wrote %s\n", c.Out)
	}
	return err
}
