package main

import (
	"context"
	"fmt"

	"forge"
	"forge/internal/progress"
	"forge/sample"
)

// CalibGroup is `forge calib`: making calibration data.
type CalibGroup struct {
	Generate CalibGenerateCmd `cmd:"" help:"Have the model answer chat prompts (thinking on, the reference's sampling) and pack prompts and answers into rows of --seq tokens, written as an int64 .npy for quantize --calib."`
}

// GenDataFlags are the settings of generated data (`forge calib generate`,
// `forge trace --generate`); unset, they take forge.GenerateOptions'
// defaults, the reference calibration generator's.
type GenDataFlags struct {
	MaxTokens   *int     `name:"max-tokens" placeholder:"N" help:"Most new tokens per answer (default ${gen_tokens})."`
	Temperature *float64 `placeholder:"T" help:"Sampling temperature; 0 is greedy (default ${gen_temp})."`
	TopP        *float64 `name:"top-p" placeholder:"P" help:"Top-p; 1 turns it off (default ${gen_top_p})."`
	TopK        *int     `name:"top-k" placeholder:"K" help:"Top-k; 0 turns it off (default ${gen_top_k})."`
	NoThink     bool     `name:"no-think" help:"Render the prompts with thinking off (enable_thinking false)."`
}

// options maps the flags onto forge.GenerateOptions.
func (f *GenDataFlags) options(seed uint64) (forge.GenerateOptions, error) {
	o := forge.GenerateOptions{Seed: seed, NoThink: f.NoThink}
	if f.MaxTokens != nil {
		if *f.MaxTokens <= 0 {
			return o, fmt.Errorf("--max-tokens %d: want a positive number of tokens", *f.MaxTokens)
		}
		o.MaxTokens = *f.MaxTokens
	}
	if f.Temperature != nil || f.TopP != nil || f.TopK != nil {
		s := sample.Options{Temperature: forge.DefaultGenTemperature, TopP: forge.DefaultGenTopP, TopK: forge.DefaultGenTopK}
		setSampling(f.Temperature, f.TopP, f.TopK, &s.Temperature, &s.TopP, &s.TopK)
		o.Sampling = &s
	}
	return o, nil
}

// given names a flag that was set, or "" when none was.
func (f *GenDataFlags) given() string {
	switch {
	case f.MaxTokens != nil:
		return "--max-tokens"
	case f.Temperature != nil:
		return "--temperature"
	case f.TopP != nil:
		return "--top-p"
	case f.TopK != nil:
		return "--top-k"
	case f.NoThink:
		return "--no-think"
	}
	return ""
}

// CalibGenerateCmd is `forge calib generate PROMPTS.jsonl --model M --out rows.npy`.
type CalibGenerateCmd struct {
	Prompts string `arg:"" type:"existingfile" placeholder:"PROMPTS.jsonl" help:"Chat prompts, one conversation a line: {\"messages\": [...], \"tools\"?: [...]}."`
	Model   string `required:"" type:"existingdir" help:"Model that answers: Hugging Face checkpoint or bundle directory (with its tokenizer)."`
	Out     string `required:"" placeholder:"ROWS.npy" help:"NumPy file to write: int64 (rows, --seq)."`
	Seq     int    `default:"${calib_ctx}" aliases:"ctx" help:"Tokens per row."`
	GenDataFlags
	Seed      uint64 `default:"0" help:"Seed of the answers (answer i: PCG(seed, i)); the same seed gives the same file."`
	Overwrite bool   `help:"Replace an existing .npy file."`
}

func (c *CalibGenerateCmd) Run(ctx context.Context) error {
	if err := positive("--seq", c.Seq); err != nil {
		return err
	}
	o, err := c.options(c.Seed)
	if err != nil {
		return err
	}
	rep, err := forge.CalibGenerate(ctx, forge.CalibGenerateConfig{
		GenerateRowsConfig: forge.GenerateRowsConfig{Model: c.Model, Prompts: c.Prompts, Seq: c.Seq,
			GenerateOptions: o, Progress: progress.New("generate", false).Set},
		Out: c.Out, Overwrite: c.Overwrite,
	})
	if err != nil {
		return err
	}
	g := rep.Generation
	fmt.Printf("wrote %s: %d rows of %d tokens (int64); %d prompts, %d answers ended at EOS, %d at %d tokens; %d tokens after the last row dropped\n",
		rep.Out, rep.Rows, rep.Seq, g.PromptCount, g.AnswersEOS, g.AnswersMax, g.MaxTokens, g.Dropped)
	fmt.Printf("calibrate with: forge quantize --calib %s:%d --ctx %d ...\n", rep.Out, rep.Rows, rep.Seq)
	return nil
}
