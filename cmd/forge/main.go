// Command forge quantizes, evaluates and runs Qwen3.5 hybrid models. This
// file only maps flags onto the forge package's jobs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/alecthomas/kong"

	"forge"
	"forge/tokenizer"
)

type cli struct {
	Inspect    InspectCmd       `cmd:"" help:"Summarise a checkpoint or bundle: architecture, parameters and bytes by part (and per-matrix formats of a bundle)."`
	Logits     LogitsCmd        `cmd:"" help:"Compute logits for token sequences into a safetensors file."`
	Synth      SynthCmd         `cmd:"" help:"Write a random-init checkpoint of any size in the real HF layout."`
	Quantize   QuantizeCmd      `cmd:"" help:"Quantize a checkpoint into a bundle."`
	SNR        SNRCmd           `cmd:"" name:"snr" help:"Weight SNR (dB) of matrices quantized to formats."`
	Tokenize   TokenizeCmd      `cmd:"" help:"Print the token ids of a text as JSON."`
	Detokenize DetokenizeCmd    `cmd:"" help:"Print the text of a JSON list of token ids."`
	Template   TemplateCmd      `cmd:"" help:"Render a conversation with the model's chat template."`
	Dequantize DequantizeCmd    `cmd:"" help:"Write a bundle back out as a Hugging Face checkpoint with the quantized weights materialized."`
	PPL        PPLCmd           `cmd:"" name:"ppl" help:"Perplexity of a checkpoint or bundle on a text, in non-overlapping windows."`
	Trace      TraceCmd         `cmd:"" help:"Record a reference model's next-token distributions over a data set into a trace file."`
	Eval       EvalGroup        `cmd:"" help:"Score a candidate against a reference trace (KL, top-1 agreement, perplexity, Δp), or compare reports: forge eval compare."`
	Version    kong.VersionFlag `help:"Print the version."`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := checkArgs(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		os.Exit(1)
	}
	var c cli
	k := kong.Parse(&c, kong.Name("forge"),
		kong.Description("forge: quantize, evaluate and run Qwen3.5 hybrid models."),
		kong.Vars{"version": forge.Version},
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.UsageOnError())
	if err := k.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		os.Exit(1)
	}
}

// checkArgs refuses arguments that are not UTF-8: kong would replace their ill-formed bytes
// with U+FFFD, so that `forge tokenize TEXT` would encode other text than stdin holding the
// same bytes, and a path would name another file.
func checkArgs(args []string) error {
	for i, a := range args {
		if err := tokenizer.CheckUTF8(a); err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	return nil
}
