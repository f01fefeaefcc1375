package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"forge"
	"forge/generate"
	"forge/internal/budget"
	"forge/model"
	"forge/sample"
)

// GenFlags are the generation settings `forge run` and `forge chat` share.
// Unset sampling flags take the reference server's defaults, which depend
// on --think (forge.DefaultSampling).
type GenFlags struct {
	Temperature *float64 `placeholder:"T" help:"Sampling temperature; 0 is greedy (default ${temp}, or ${think_temp} with --think)."`
	TopP        *float64 `name:"top-p" placeholder:"P" help:"Keep the fewest most likely tokens whose probabilities reach P; 1 turns it off (default ${top_p}, or ${think_top_p} with --think)."`
	TopK        *int     `name:"top-k" placeholder:"K" help:"Keep the K most likely tokens; 0 turns it off (default ${top_k})."`
	MinP        float64  `name:"min-p" placeholder:"P" help:"Keep tokens at least P times as likely as the most likely one (0: off)."`
	Presence    float64  `placeholder:"X" help:"Presence penalty: subtract X from the logit of every token already in this reply."`
	DRY         float64  `name:"dry" placeholder:"X" help:"DRY multiplier against verbatim repeats (0: off; it can damage repeated code)."`
	DRYBase     float64  `name:"dry-base" default:"${dry_base}" help:"DRY base: penalty X·BASE^(match−allowed)."`
	DRYAllowed  int      `name:"dry-allowed" default:"${dry_allowed}" help:"DRY: repeats up to this many tokens are free."`
	Seed        *uint64  `help:"Sampler seed; the same seed gives the same reply (default: a random seed, reported)."`
	MaxTokens   int      `name:"max-tokens" default:"${max_tokens}" help:"Most tokens to generate (capped by the context)."`
	Stop        []string `sep:"none" placeholder:"TEXT" help:"Stop string (repeat for several; \\n, \\t, \\\\ are escapes): the reply ends before it."`
	Think       bool     `negatable:"" help:"Let the model think first (chat template's enable_thinking; --messages and chat only)."`
	ThinkBudget string   `name:"think-budget" default:"auto" placeholder:"N|auto|off" help:"With --think: close the thinking after N tokens (auto: min(${think_budget}, max(max-tokens − 4096, max-tokens/2)))."`
	LoopGuard   int      `name:"loop-guard" default:"${loop_reps}" help:"End a reply whose last tokens repeat this many times with a period of 4–256 tokens (0: off)."`
	KV          string   `name:"kv" default:"f32" enum:"f32,int8" help:"KV cache: f32, or int8 (keys fp16, values int8 with a scale per token and head; forge eval --kv int8 measures its cost)."`
	Act         string   `name:"act" default:"auto" enum:"auto,f32,int8" help:"Activations times 4-bit LUT weights: int8 (decode steps quantize them in groups of 32, as llama.cpp does; forge eval --act int8 measures the cost), f32 (exact), or auto: int8 where this CPU has int8 kernels (AVX-512 VNNI or AVX2 with GOEXPERIMENT=simd), f32 elsewhere."`
	Draft       string   `placeholder:"DIR" type:"existingdir" help:"A small model with the same tokenizer (checkpoint or bundle) that drafts tokens for speculative decoding: the same replies (greedy: token for token; sampled: the same distribution), fewer target steps."`
	DraftK      int      `name:"draft-k" placeholder:"K" help:"With --draft: the most tokens drafted per target call, 1–16 (default ${draft_k}); the length adapts to the acceptance rate."`
	DraftFixed  bool     `name:"draft-fixed" help:"With --draft: draft K tokens every round, whatever they cost (measurements)."`
}

// config maps the flags onto a forge.RunConfig (the prompt aside).
func (f *GenFlags) config() (forge.RunConfig, error) {
	if f.MaxTokens <= 0 {
		return forge.RunConfig{}, fmt.Errorf("--max-tokens %d: want a positive number of tokens", f.MaxTokens)
	}
	if f.LoopGuard < 0 {
		return forge.RunConfig{}, fmt.Errorf("--loop-guard %d: want a number of repetitions, or 0 for off", f.LoopGuard)
	}
	s := forge.DefaultSampling(f.Think)
	setSampling(f.Temperature, f.TopP, f.TopK, &s.Temperature, &s.TopP, &s.TopK)
	s.MinP, s.Presence = f.MinP, f.Presence
	s.DRY = sample.DRY{Multiplier: f.DRY, Base: f.DRYBase, Allowed: f.DRYAllowed}
	if f.Seed != nil {
		s.Seed = *f.Seed
	} else {
		s.Seed = rand.Uint64()
	}
	if err := s.Validate(); err != nil {
		return forge.RunConfig{}, err
	}
	cfg := forge.RunConfig{Sample: s, MaxTokens: f.MaxTokens, LoopGuard: f.LoopGuard, Draft: f.Draft, DraftK: f.DraftK, DraftFixed: f.DraftFixed}
	if f.DraftFixed && f.Draft == "" {
		return forge.RunConfig{}, errors.New("--draft-fixed needs --draft")
	}
	if f.DraftK != 0 {
		if f.Draft == "" {
			return forge.RunConfig{}, errors.New("--draft-k needs --draft")
		}
		if err := generate.CheckDraftK(f.DraftK); err != nil {
			return forge.RunConfig{}, fmt.Errorf("--draft-k: %w", err)
		}
	}
	cfg.KV, _ = model.ParseKV(f.KV)    // kong checked the enum
	cfg.Act, _ = model.ParseAct(f.Act) // and this one
	if f.LoopGuard == 0 {
		cfg.LoopGuard = -1
	}
	for _, raw := range f.Stop {
		stop, err := unescape(raw)
		if err != nil {
			return forge.RunConfig{}, fmt.Errorf("--stop %q: %w", raw, err)
		}
		if stop == "" {
			return forge.RunConfig{}, errors.New("--stop \"\": a stop string may not be empty")
		}
		cfg.Stop = append(cfg.Stop, stop)
	}
	budget, err := thinkBudget(f.ThinkBudget, f.MaxTokens)
	if err != nil {
		return forge.RunConfig{}, err
	}
	if f.Think {
		cfg.ThinkBudget = budget
	}
	return cfg, nil
}

// setSampling copies the sampling flags that were given (non-nil) over
// the defaults in temp, topP and topK.
func setSampling(flagTemp, flagTopP *float64, flagTopK *int, temp, topP *float64, topK *int) {
	if flagTemp != nil {
		*temp = *flagTemp
	}
	if flagTopP != nil {
		*topP = *flagTopP
	}
	if flagTopK != nil {
		*topK = *flagTopK
	}
}

// thinkBudget reads --think-budget: a number of tokens, auto or off.
func thinkBudget(v string, maxTokens int) (int, error) {
	switch v {
	case "auto", "":
		return forge.ThinkBudget(0, maxTokens), nil
	case "off", "0":
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--think-budget %q: want a number of tokens, auto or off", v)
	}
	return n, nil
}

// unescape reads the escapes \n, \t, \r, \\ and \" of a stop string.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i++; i == len(s) {
			return "", errors.New("ends with a lone backslash")
		}
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '"':
			b.WriteByte(s[i])
		default:
			return "", fmt.Errorf("unknown escape \\%c (\\n, \\t, \\r, \\\\ and \\\" are known)", s[i])
		}
	}
	return b.String(), nil
}

// RunCmd is `forge run`.
type RunCmd struct {
	Model    string `required:"" type:"existingdir" help:"Checkpoint or bundle directory (with its tokenizer)."`
	Prompt   string `arg:"" optional:"" help:"Prompt text, used as it is (no chat template)."`
	Messages string `type:"existingfile" placeholder:"FILE" help:"A conversation as a JSON list of messages, rendered with the model's chat template."`
	JSON     bool   `name:"json" help:"Print one JSON object (text, tokens, finish_reason, speeds, settings) instead of streaming."`
	GenFlags `embed:""`
}

func (c *RunCmd) Run(ctx context.Context) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	cfg.Model = c.Model
	cfg.Warn = warn
	if cfg.Prompt, err = promptOf(c.Prompt, c.Messages, c.Think); err != nil {
		return err
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // a closed pipe is an error, not death
	var emit func(string) error
	if !c.JSON {
		emit = func(s string) error { _, err := os.Stdout.WriteString(s); return err }
	}
	rep, err := forge.Run(ctx, cfg, emit)
	if rep == nil {
		return err
	}
	if c.JSON {
		if err := printJSON(rep); err != nil {
			return err
		}
	} else if err == nil {
		fmt.Println()
	}
	fmt.Fprintln(os.Stderr, summary(rep))
	return quietStop(ctx, err)
}

// promptOf is the prompt of a command that takes a prompt text or
// --messages FILE (rendered with the chat template, thinking if think).
func promptOf(text, messages string, think bool) (forge.Prompt, error) {
	switch {
	case text != "" && messages != "":
		return forge.Prompt{}, errors.New("give a prompt or --messages, not both")
	case messages != "":
		data, err := readSmall(messages)
		if err != nil {
			return forge.Prompt{}, err
		}
		return forge.Prompt{Messages: data, Think: think, Name: messages}, nil
	case text == "":
		return forge.Prompt{}, errors.New("the prompt is empty: give a prompt text or --messages FILE")
	}
	return forge.Prompt{Text: text}, nil
}

// quietStop turns the end of a reply by a closed pipe into success and
// by Ctrl-C into exit status 130, the summary having been printed.
func quietStop(ctx context.Context, err error) error {
	switch {
	case err == nil || errors.Is(err, syscall.EPIPE):
		return nil
	case ctx.Err() != nil:
		os.Exit(130)
	}
	return err
}

// summary is the one line `forge run` prints on stderr after a reply.
func summary(r *forge.RunReport) string {
	finish := r.Finish
	switch {
	case r.LoopPeriod > 0:
		finish += fmt.Sprintf(" (period %d)", r.LoopPeriod)
	case r.ContextFull:
		finish += " (context full)"
	case r.Finish == string(generate.FinishCancel):
		finish += " (interrupted)"
	}
	think := ""
	if r.ThinkClosed {
		think = "; thinking closed at the budget"
	}
	draft := ""
	if d := r.Draft; d != nil {
		draft = fmt.Sprintf("; drafts kept %d of %d (%.0f%%), %.2f tokens per target call", d.Kept, d.Drafted, 100*d.AcceptRate, r.TokensPerCall)
		if d.Failed != "" {
			draft += "; the drafter failed (" + d.Failed + "), plain decoding went on"
		}
	}
	return fmt.Sprintf("forge: prompt %d tokens (%d cached), %.0f tok/s; generated %d tokens, %.1f tok/s%s; finish %s%s; seed %d",
		r.PromptTokens, r.CachedTokens, r.PrefillTPS, r.Generated, r.DecodeTPS, draft, finish, think, r.Settings.Seed)
}

// readSmall reads a user's conversation file of at most 64 MiB.
func readSmall(path string) ([]byte, error) { return budget.ReadFile(path, 64<<20) }
