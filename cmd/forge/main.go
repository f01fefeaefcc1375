// Command forge quantizes, evaluates and runs Qwen3.5 hybrid models. This
// file only maps flags onto the forge package's jobs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"forge"
	"forge/corpus"
	"forge/eval/lcpp"
	"forge/generate"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/internal/units"
	"forge/sample"
	"forge/tensor"
	"forge/tokenizer"
)

type cli struct {
	Inspect    InspectCmd       `cmd:"" group:"Models" help:"Summarise a checkpoint or bundle: architecture, parameters and bytes by part (and per-matrix formats of a bundle)."`
	Logits     LogitsCmd        `cmd:"" group:"Models" help:"Compute logits for token sequences into a safetensors file."`
	Synth      SynthCmd         `cmd:"" group:"Models" help:"Write a random-init checkpoint of any size in the real HF layout."`
	Dequantize DequantizeCmd    `cmd:"" group:"Models" help:"Write a bundle back out as a Hugging Face checkpoint with the quantized weights materialized."`
	Export     ExportCmd        `cmd:"" group:"Models" help:"Write a bundle's matrices in the reference ANE builder's layout (layer_XX.safetensors, layer_XX_mixer.safetensors, lm_head.safetensors)."`
	Import     ImportCmd        `cmd:"" group:"Models" help:"Read a directory in the reference ANE builder's layout into a bundle (the other tensors from its checkpoint)."`
	ANE        ANEGroup         `cmd:"" name:"ane" group:"Models" help:"Apple Neural Engine: forge ane plan (chunks, placement, weight/state/KV bytes and projected ms per step)."`
	Run        RunCmd           `cmd:"" group:"Run" help:"Generate a reply to a prompt or conversation, streamed to stdout."`
	Chat       ChatCmd          `cmd:"" group:"Run" help:"Talk with a model interactively (the conversation's state is kept between turns)."`
	Bench      BenchCmd         `cmd:"" group:"Run" help:"Measure prefill and decode speed (llama-bench's pp/tg tests) against this machine's read bandwidth."`
	Serve      ServeCmd         `cmd:"" group:"Run" help:"Serve the OpenAI API (chat completions, completions, models) with a prompt cache shared by the slots."`
	AB         ABCmd            `cmd:"" name:"ab" group:"Run" help:"Speculative decoding against plain decoding: replies per seed both ways, and verify blocks against decode steps teacher-forced."`
	Quantize   QuantizeCmd      `cmd:"" group:"Quantize" help:"Quantize a checkpoint into a bundle."`
	SNR        SNRCmd           `cmd:"" name:"snr" group:"Quantize" help:"Weight SNR (dB) of matrices quantized to formats."`
	Plan       PlanCmd          `cmd:"" group:"Quantize" help:"Choose a mixed-precision plan from a sweep under a size budget (bits per weight or bundle size)."`
	Sweep      SweepGroup       `cmd:"" group:"Quantize" help:"Measure the sensitivity of each unit (matrix, part, layer or band) in each candidate format: ΔKL on a trace and exact bytes; sharded for a cluster."`
	Calib      CalibGroup       `cmd:"" group:"Quantize" help:"Make calibration data: forge calib generate (the model answers chat prompts; prompts and answers as .npy token rows)."`
	Numerics   NumericsCmd      `cmd:"" group:"Evaluate" help:"Emulate Apple's Neural Engine fp16 arithmetic on a model's own weights: per-layer and per-chunk error against fp32, overflows and subnormals per tensor kind, end-to-end KL, and which fixes repair them."`
	Trace      TraceGroup       `cmd:"" group:"Evaluate" help:"Record a reference model's next-token distributions over a data set (or a llama.cpp-compatible base: forge trace lcpp)."`
	Eval       EvalGroup        `cmd:"" group:"Evaluate" help:"Score a candidate against a reference trace (KL, top-1 agreement, perplexity, Δp); ablations, llama.cpp mode, comparisons."`
	PPL        PPLCmd           `cmd:"" name:"ppl" group:"Evaluate" help:"Perplexity of a checkpoint or bundle on a text, in non-overlapping windows."`
	Tokenize   TokenizeCmd      `cmd:"" group:"Tokenizer" help:"Print the token ids of a text as JSON."`
	Detokenize DetokenizeCmd    `cmd:"" group:"Tokenizer" help:"Print the text of a JSON list of token ids."`
	Template   TemplateCmd      `cmd:"" group:"Tokenizer" help:"Render a conversation with the model's chat template."`
	Version    kong.VersionFlag `help:"Print the version."`
}

func main() {
	noAsyncPreempt()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupts(cancel)
	if err := checkArgs(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		os.Exit(2)
	}
	var c cli
	parser, err := kong.New(&c, kong.Name("forge"),
		kong.Description("forge: quantize, evaluate and run Qwen3.5 hybrid models."),
		kong.Vars{"version": forge.Version}, defaults(),
		kong.BindTo(ctx, (*context.Context)(nil)))
	if err != nil {
		panic(err) // the CLI's own definition is wrong
	}
	k, err := parser.Parse(os.Args[1:])
	if err != nil {
		usageError(parser, err)
	}
	if stop := profile(); stop != nil {
		defer stop()
	}
	if err := k.Run(); err != nil {
		os.Exit(report(ctx, err))
	}
}

// profile writes a CPU profile to $FORGE_CPUPROFILE while the command
// runs, when that is set (for `go tool pprof`; BENCHMARKS.md).
func profile() func() {
	path := os.Getenv("FORGE_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "forge: FORGE_CPUPROFILE:", err)
		return nil
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// defaults are the library's defaults, shown in --help and filled into
// flags the user leaves out: each is defined once, in the package that
// applies it.
func defaults() kong.Vars {
	return kong.Vars{
		"trace_ctx":        strconv.Itoa(forge.DefaultTraceSeq),
		"sweep_rows":       strconv.Itoa(forge.DefaultSweepRows),
		"sweep_candidates": forge.DefaultSweepCandidates,
		"lcpp_ctx":         strconv.Itoa(lcpp.DefaultCtx),
		"ppl_ctx":          strconv.Itoa(forge.PPLDefaultCtx),
		"calib_ctx":        strconv.Itoa(corpus.DefaultSeq),
		"dequant_dtype":    forge.DequantizeDType,
		"dequant_shard":    sizeFlag(forge.DequantizeShardSize),
		"temp":             ftoa(generate.DefaultTemperature),
		"think_temp":       ftoa(generate.DefaultThinkTemperature),
		"top_p":            ftoa(generate.DefaultTopP),
		"think_top_p":      ftoa(generate.DefaultThinkTopP),
		"top_k":            strconv.Itoa(generate.DefaultTopK),
		"dry_base":         ftoa(sample.DefaultDRYBase),
		"dry_allowed":      strconv.Itoa(sample.DefaultDRYAllowed),
		"max_tokens":       strconv.Itoa(generate.DefaultMaxTokens),
		"think_budget":     strconv.Itoa(generate.DefaultThinkBudget),
		"loop_reps":        strconv.Itoa(generate.LoopReps),
		"draft_k":          strconv.Itoa(generate.DefaultDraftK),
		"bench_prompt":     strconv.Itoa(forge.BenchDefaultPrompt),
		"bench_gen":        strconv.Itoa(forge.BenchDefaultGen),
		"bench_repeat":     strconv.Itoa(forge.BenchDefaultRepeat),
		"gen_tokens":       strconv.Itoa(forge.DefaultGenMaxTokens),
		"gen_temp":         ftoa(forge.DefaultGenTemperature),
		"gen_top_p":        ftoa(forge.DefaultGenTopP),
		"gen_top_k":        strconv.Itoa(forge.DefaultGenTopK),
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// noAsyncPreempt re-executes forge once with GODEBUG=asyncpreemptoff=1
// where Go's asynchronous preemption would leave the vector registers'
// upper halves dirty (tensor.PreemptDirtiesUpper): on this project's Xeon
// host every math.Exp after a preemption then took ~1 µs instead of 11 ns,
// and the main job ran 2.5× slower (BENCHMARKS.md). Goroutines are still
// preempted at function calls, which every kernel loop makes per chunk.
func noAsyncPreempt() {
	env := os.Getenv("GODEBUG")
	if !tensor.PreemptDirtiesUpper() || strings.Contains(env, "asyncpreemptoff") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if env != "" {
		env += ","
	}
	environ := []string{"GODEBUG=" + env + "asyncpreemptoff=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			environ = append(environ, kv)
		}
	}
	syscall.Exec(exe, os.Args, environ) // returns only on failure
}

// interrupts makes SIGINT and SIGTERM cancel ctx, so that every job stops
// at its next check, removes its temporary files and says so; a second
// signal ends the process at once (the next run removes what it left).
func interrupts(cancel context.CancelFunc) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nforge: %v: stopping (again to stop at once)\n", s)
		cancel()
		<-sig
		fmt.Fprintln(os.Stderr, "forge: stopped at once")
		os.Exit(130)
	}()
}

// usageError prints a parse error, the command's usage line and where the
// full help is, instead of the whole help text.
func usageError(parser *kong.Kong, err error) {
	fmt.Fprintf(os.Stderr, "forge: error: %v\n", err)
	var pe *kong.ParseError
	cmd := "forge"
	if errors.As(err, &pe) && pe.Context != nil {
		if sel := pe.Context.Selected(); sel != nil {
			cmd = "forge " + sel.Path()
		}
	}
	fmt.Fprintf(os.Stderr, "run '%s --help' for usage\n", cmd)
	os.Exit(2)
}

// report prints a job's error with what the user can do about it and
// returns the exit status: 130 after an interrupt, 1 otherwise.
func report(ctx context.Context, err error) int {
	interrupted := ctx.Err() != nil && errors.Is(err, context.Canceled)
	if interrupted {
		fmt.Fprintln(os.Stderr, "forge: interrupted; no output was written")
	} else {
		fmt.Fprintf(os.Stderr, "forge: %v\n", err)
	}
	switch {
	case errors.Is(err, outpath.ErrExists):
		fmt.Fprintln(os.Stderr, "  pass --overwrite to replace it (forge only replaces what it wrote itself)")
	case errors.Is(err, outpath.ErrNotOwned):
		fmt.Fprintln(os.Stderr, "  forge only replaces its own outputs: choose another path, or move that one away yourself")
	case errors.Is(err, budget.ErrTooLarge):
		fmt.Fprintln(os.Stderr, "  this machine cannot hold it: choose smaller sizes")
	case errors.Is(err, forge.ErrCalibOverlap):
		fmt.Fprintln(os.Stderr, "  calibrate on other data than the bundle is evaluated on (or leave out --eval-trace)")
	}
	var kept *forge.WorkKeptError
	if errors.As(err, &kept) {
		fmt.Fprintf(os.Stderr, "  %s (%s) was kept: run the same command with --resume to continue,\n  or remove it with: rm -r %s\n",
			kept.Dir, units.Bytes(kept.Bytes), shellQuote(kept.Dir))
	}
	if interrupted {
		return 130
	}
	return 1
}

// warn prints a warning about how a job will run (forge.Runtime.Warnings)
// to stderr.
func warn(w string) { fmt.Fprintf(os.Stderr, "forge: warning: %s\n", w) }

func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
