package forge

import (
	"context"

	"forge/generate"
	"forge/model"
	"forge/sample"
)

// RunConfig configures Run, one reply from a model.
type RunConfig struct {
	Model       string // checkpoint or bundle directory (with its tokenizer)
	Prompt      Prompt
	Sample      sample.Options
	MaxTokens   int       // 0: up to the context
	Stop        []string  // stop strings
	ThinkBudget int       // > 0: close the thinking after this many tokens (Prompt.Think only)
	LoopGuard   int       // 0: generate.LoopReps; < 0: off
	KV          model.KV  // the KV cache format (Run only; a Runtime has its own)
	Act         model.Act // the activation precision (Run only)
	Draft       string    // a drafter's directory for speculative decoding (Run only), or ""
	DraftK      int       // the most tokens it drafts per target call (0: generate.DefaultDraftK)
	DraftFixed  bool      // draft DraftK tokens every round (no adaptation)
	// Warn, if set, receives the runtime's warnings (Runtime.Warnings)
	// before the reply starts (Run only).
	Warn func(string)
}

// RunReport is one reply and its measurements (`forge run --json`).
type RunReport struct {
	Text          string           `json:"text"`
	Tokens        []int            `json:"tokens"`
	Finish        string           `json:"finish_reason"`
	LoopPeriod    int              `json:"loop_period,omitempty"`
	ContextFull   bool             `json:"context_full,omitempty"`
	ThinkClosed   bool             `json:"think_budget_closed,omitempty"`
	PromptTokens  int              `json:"prompt_tokens"`
	CachedTokens  int              `json:"cached_tokens"`
	Generated     int              `json:"completion_tokens"`
	PrefillTPS    float64          `json:"prefill_tps"`
	DecodeTPS     float64          `json:"decode_tps"`
	PrefillSec    float64          `json:"prefill_seconds"`
	DecodeSec     float64          `json:"decode_seconds"`
	Settings      RunSettings      `json:"settings"`
	Draft         *DraftReport     `json:"draft,omitempty"`
	AcceptHist    []int            `json:"accept_hist,omitempty"`     // rounds by the number of drafts kept (speculative decoding)
	TokensPerCall float64          `json:"tokens_per_call,omitempty"` // generated tokens per target forward after prefill
	Metrics       generate.Metrics `json:"-"`
}

// DraftReport is what a reply with a drafter records of it: its identity
// and how drafting went.
type DraftReport struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	Fingerprint   string  `json:"fingerprint"`
	Tokenizer     string  `json:"tokenizer"`
	K             int     `json:"k"`
	Drafted       int     `json:"drafted"`
	Kept          int     `json:"kept"`
	AcceptRate    float64 `json:"accept_rate"`
	TargetCalls   int     `json:"target_calls"`
	DraftSeconds  float64 `json:"draft_seconds"`
	VerifySeconds float64 `json:"verify_seconds"`
	SampleSeconds float64 `json:"sample_seconds"`
	Failed        string  `json:"failed,omitempty"` // why drafting stopped mid-reply (plain decoding went on)
}

// RunSettings are the settings a reply was generated with (reproducible
// with the same seed).
type RunSettings struct {
	Temperature float64  `json:"temperature"`
	TopK        int      `json:"top_k"`
	TopP        float64  `json:"top_p"`
	MinP        float64  `json:"min_p"`
	Presence    float64  `json:"presence_penalty"`
	DRY         float64  `json:"dry_multiplier"`
	DRYBase     float64  `json:"dry_base"`
	DRYAllowed  int      `json:"dry_allowed_length"`
	Seed        uint64   `json:"seed"`
	MaxTokens   int      `json:"max_tokens"`
	Stop        []string `json:"stop,omitempty"`
	Think       bool     `json:"think"`
	ThinkBudget int      `json:"think_budget,omitempty"`
	KV          string   `json:"kv"`  // the KV cache format
	Act         string   `json:"act"` // the activation precision
}

// Run generates one reply to cfg.Prompt, handing its text to emit as it is
// released (emit may be nil). An error of emit or a cancelled ctx ends the
// reply early: Run then returns the partial report with that error.
func Run(ctx context.Context, cfg RunConfig, emit func(string) error) (*RunReport, error) {
	rt, err := OpenRuntime(cfg.Model, generate.Options{KV: cfg.KV, Act: cfg.Act})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	cfg.Act = rt.Model.ResolveAct(cfg.Act) // what the reply's settings report
	if cfg.Draft != "" {
		if err := rt.AttachDraft(cfg.Draft, cfg.DraftK, cfg.DraftFixed); err != nil {
			return nil, err
		}
	}
	ids, err := rt.Tokens(cfg.Prompt)
	if err != nil {
		return nil, err
	}
	if cfg.Warn != nil {
		for _, w := range rt.Warnings {
			cfg.Warn(w)
		}
	}
	return rt.Reply(ctx, ids, cfg, emit)
}

// Reply generates one reply to the prompt ids on the runtime's engine
// (reusing its conversation state where the prompt extends it), with the
// settings of cfg (its Model and Prompt are not used).
func (r *Runtime) Reply(ctx context.Context, ids []int, cfg RunConfig, emit func(string) error) (*RunReport, error) {
	res, err := r.Engine().Generate(ctx, generate.Request{
		Prompt: ids, Sample: cfg.Sample, MaxTokens: cfg.MaxTokens, Stop: cfg.Stop,
		ThinkBudget: cfg.ThinkBudget, LoopGuard: cfg.LoopGuard,
	}, emit)
	if res.Finish == "" {
		return nil, err
	}
	mt := res.Metrics
	var dr *DraftReport
	tpc := 0.0
	if d := r.Draft; d != nil {
		tpc = mt.TokensPerCall()
		dr = &DraftReport{Name: d.Name, Kind: d.Kind, Fingerprint: d.Fingerprint, Tokenizer: d.Tokenizer, K: d.K,
			Drafted: mt.Drafted, Kept: mt.Kept, AcceptRate: mt.AcceptRate(), TargetCalls: mt.TargetCalls,
			DraftSeconds: mt.DraftSeconds, VerifySeconds: mt.VerifySeconds, SampleSeconds: mt.SampleSeconds,
			Failed: mt.DraftFailed}
	}
	return &RunReport{
		Draft: dr, AcceptHist: mt.AcceptHist,
		Text: res.Text, Tokens: res.Tokens, Finish: string(res.Finish), LoopPeriod: mt.LoopPeriod,
		ContextFull: mt.ContextFull, ThinkClosed: mt.ThinkInjected,
		PromptTokens: mt.PromptTokens, CachedTokens: mt.CachedTokens, Generated: mt.GeneratedTokens,
		PrefillTPS: mt.PrefillTPS(), DecodeTPS: mt.DecodeTPS(), PrefillSec: mt.PrefillSeconds, DecodeSec: mt.DecodeSeconds,
		Metrics: mt, TokensPerCall: tpc,
		Settings: settingsOf(cfg),
	}, err
}
