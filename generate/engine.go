package generate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"forge/model"
	"forge/sample"
	"forge/tokenizer"
)

// ThinkClose is the phrase the thinking budget injects (§4.4 of the
// reference pipeline).
const ThinkClose = "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking directly now.\n</think>\n\n"

// DefaultMaxTokens bounds a reply when neither Request.MaxTokens nor the
// model's context does (the reference server's --max-tokens default).
const DefaultMaxTokens = 4096

// Loop guard defaults (§4.3): a reply whose last Reps·P tokens are P-periodic
// for some P in [LoopMinPeriod, LoopMaxPeriod] ends with FinishLoop; the
// first check runs at LoopFirstCheck tokens, then every LoopEvery more.
const (
	LoopReps       = 6
	LoopMinPeriod  = 4
	LoopMaxPeriod  = 256
	LoopFirstCheck = 64
	LoopEvery      = 32
)

// Finish says why a reply ended.
type Finish string

// The finish reasons (package documentation).
const (
	FinishStop   Finish = "stop"
	FinishLength Finish = "length"
	FinishLoop   Finish = "loop"
	FinishCancel Finish = "cancel"
	FinishError  Finish = "error"
)

// Request is one reply to generate. Its zero value (but for Prompt) is a
// greedy reply up to the context, ending at the tokenizer's EOS ids.
type Request struct {
	Prompt      []int          // the whole prompt's ids (not empty)
	Sample      sample.Options // the sampler chain; zero value greedy
	MaxTokens   int            // most tokens to generate; 0: up to the context (DefaultMaxTokens when it is unknown)
	Stop        []string       // stop strings: the reply's text ends before the earliest match
	StopTokens  []int          // ids that end the reply besides the tokenizer's EOS ids
	ThinkBudget int            // > 0: inject ThinkClose once after this many tokens without "</think>"
	LoopGuard   int            // repetitions the loop guard needs: 0 LoopReps, < 0 off
	// Logprobs asks for each sampled token's Logprob in Result.Logprobs,
	// with TopLogprobs (≤ MaxTopLogprobs) candidates per step.
	Logprobs    bool
	TopLogprobs int
	// Logits, when set, receives before each sampled token the logits
	// [vocab] it is sampled from (read only, valid during the call).
	Logits func(logits []float32)
	// OnLogprob, when set with Logprobs, receives each entry of
	// Result.Logprobs as it is made, before the token's text is released
	// (streaming).
	OnLogprob func(Logprob)
}

// Metrics are one reply's measurements (§4.6 of the reference).
type Metrics struct {
	PromptTokens    int     // len(Request.Prompt)
	CachedTokens    int     // prompt tokens reused from the State
	PrefillTokens   int     // prompt tokens run (PromptTokens − CachedTokens)
	PrefillSeconds  float64 // time of that prefill
	GeneratedTokens int     // tokens of the reply, injected ones included
	DecodeSeconds   float64 // from the end of prefill to the end of the reply
	LoopPeriod      int     // the period that ended the reply (FinishLoop), else 0
	ThinkInjected   bool    // the thinking budget closed the thinking (ThinkClose was fed)
	ContextFull     bool    // the reply stopped because the context was full

	// Speculative decoding (Options.Draft); TargetCalls also counts plain decoding's steps.
	TargetCalls   int     // forwards of the target after prefill (verify blocks and plain steps)
	AcceptHist    []int   // AcceptHist[n]: rounds whose first n drafts were kept (n = 0…DraftK)
	Drafted       int     // tokens drafted
	Kept          int     // drafts kept
	DraftSeconds  float64 // drafting (the drafter's forwards and draws)
	VerifySeconds float64 // the target's verify blocks and plain steps
	SampleSeconds float64 // deciding drafts and sampling
	DraftFailed   string  // why drafting stopped mid-reply (plain decoding went on), "" if it did not
}

// TokensPerCall is generated tokens per target forward after prefill (1
// for plain decoding but for the token sampled from the prefill).
func (m Metrics) TokensPerCall() float64 { return rate(m.GeneratedTokens, float64(m.TargetCalls)) }

// AcceptRate is the fraction of drafted tokens kept.
func (m Metrics) AcceptRate() float64 { return rate(m.Kept, float64(m.Drafted)) }

// PrefillTPS is prefill tokens per second (0 when nothing was run).
func (m Metrics) PrefillTPS() float64 { return rate(m.PrefillTokens, m.PrefillSeconds) }

// DecodeTPS is generated tokens per second of decode time.
func (m Metrics) DecodeTPS() float64 { return rate(m.GeneratedTokens, m.DecodeSeconds) }

func rate(n int, sec float64) float64 {
	if n == 0 || sec <= 0 {
		return 0
	}
	return float64(n) / sec
}

// Result is a finished reply.
type Result struct {
	Text   string // the reply's text (stop string and stop token excluded)
	Tokens []int  // the reply's ids, injected ones included, stop token excluded
	Finish Finish
	// StopToken is the id that ended the reply (sampled, not fed), or −1
	// when none did.
	StopToken int
	// Logprobs has one entry per sampled token of Tokens (Request.Logprobs;
	// tokens the thinking budget injected have none).
	Logprobs []Logprob
	Metrics  Metrics
}

// Options configure an Engine; the zero value is the default.
type Options struct {
	Chunk int       // prefill chunk (0: model.DefaultChunk)
	KV    model.KV  // the State's KV cache format
	Act   model.Act // the State's activation precision (model.ActInt8: decode steps in int8)
	// Cache is a prompt cache shared with other Engines of the same Model
	// (nil: only the engine's own turn snapshot is reused).
	Cache *Cache
	// NoReuse makes every Generate start from an empty State (to compare
	// cached and uncached replies).
	NoReuse bool
	// Continue lets a prompt that extends everything the State has
	// consumed, the last reply included, go on from the live State, as an
	// interactive chat does: the next turn prefills only the new message,
	// but its logits then differ from a cold prefill's in the last bits
	// (the reply was fed by decode steps). An engine that continues takes
	// no part in a Cache (Options.Cache is ignored).
	Continue bool
	// Draft, when set, drafts tokens for speculative decoding
	// (speculative.go): a model whose ids mean what the target's mean
	// (CheckDraft). The replies are the ones plain decoding gives — the
	// same tokens when greedy, the same distribution when sampling.
	Draft *model.Model
	// DraftK is the most tokens the drafter proposes per target call
	// (0: DefaultDraftK; at most MaxDraftK); the length of each round
	// adapts to the acceptance rate and the measured costs.
	DraftK int
	// DraftFixed makes every round draft DraftK tokens (measurements,
	// tests), where the length otherwise adapts.
	DraftFixed bool
	// Batcher, when set and On, runs the plain decode steps of the Engines
	// sharing it that decode at the same time as one batch (server slots).
	Batcher *Batcher
	// NoWarm skips New's warm-up of the States (model.Warm: a few decode
	// steps, and a verify block of DraftK+1 rows with a drafter, so that
	// the first reply's tokens do not pay first-use costs).
	NoWarm bool
}

// Engine generates replies from one Model for one conversation at a time:
// it owns a State and a turn snapshot (a mark of that State at the last
// prompt's last cut point), and may share a Cache with other Engines; the
// next Generate resumes from the longest of them that its prompt extends
// (package documentation). An Engine is not safe for concurrent use;
// several Engines may share one Model.
type Engine struct {
	lane     // the target model and its State
	tok      *tokenizer.Tokenizer
	opts     Options
	cached   int // prompt tokens the last prefill reused
	breakers *sample.Breakers
	draft    *drafter // nil: plain decoding
	step     stepReq  // a batched decode step's request (Options.Batcher)
	turnID   int      // <|im_start|>, −1 if the tokenizer has none
	userID   int      // "user", −1 if it is not one token
}

// New returns an Engine for m, whose tokenizer is tok.
func New(m *model.Model, tok *tokenizer.Tokenizer, o Options) *Engine {
	if o.Chunk <= 0 {
		o.Chunk = model.DefaultChunk
	}
	if o.Continue {
		o.Cache = nil
	}
	if o.DraftK == 0 {
		o.DraftK = DefaultDraftK
	}
	if err := CheckDraftK(o.DraftK); err != nil {
		panic("generate.New: " + err.Error())
	}
	e := &Engine{lane: lane{m: m, s: m.NewStateKV(o.KV)}, tok: tok, opts: o, turnID: -1, userID: -1}
	e.s.SetAct(o.Act)
	e.step = stepReq{s: e.s, logits: make([]float32, m.Config().Vocab), done: make(chan struct{}, 1)}
	if o.Draft != nil {
		if o.Draft.Config().Vocab != m.Config().Vocab {
			panic("generate.New: the drafter's vocabulary differs from the target's (CheckDraft)")
		}
		e.draft = newDrafter(o.Draft, o)
	}
	vocab := m.Config().Vocab
	e.breakers = sample.NewBreakers(vocab, func(id int) string {
		s, _ := tok.Decode([]int{id})
		return s
	})
	if ids := tok.Encode("<|im_start|>"); len(ids) == 1 {
		e.turnID = ids[0]
	}
	if ids := tok.Encode("user"); len(ids) == 1 {
		e.userID = ids[0]
	}
	if !o.NoWarm {
		rows := 1
		if e.draft != nil {
			rows = o.DraftK + 1
			o.Draft.Warm(e.draft.s, o.DraftK)
		}
		m.Warm(e.s, rows)
	}
	return e
}

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// Tokenizer returns the engine's tokenizer.
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// Reset forgets the conversation: the next Generate starts cold.
func (e *Engine) Reset() {
	e.lane.reset()
	if e.draft != nil {
		e.draft.lane.reset()
	}
}

// Fed returns the tokens the live State has consumed (read only).
func (e *Engine) Fed() []int { return e.fed }

// Generate runs one reply to req, handing each piece of released text to
// emit as it is decided (emit may be nil). An error of emit or a done ctx
// ends the reply with FinishCancel; Generate then returns the partial
// Result and that error. Errors before any token (an empty prompt, one
// that does not fit the context, ids outside the vocabulary, invalid
// sampler options) return a zero Result.
func (e *Engine) Generate(ctx context.Context, req Request, emit func(text string) error) (Result, error) {
	room, err := e.check(&req)
	if err != nil {
		return Result{}, err
	}
	g := e.newRun(req, emit)
	e.reserve(len(req.Prompt) + room)
	t0 := time.Now()
	logits, err := e.prefill(ctx, req.Prompt, &g.res.Metrics)
	if err != nil {
		return Result{}, err
	}
	if e.draft != nil {
		g.startDraft()
	}
	g.res.Metrics.PrefillSeconds = time.Since(t0).Seconds()
	t1 := time.Now()
	if e.draft != nil {
		err = g.decodeDraft(ctx, logits, room)
	} else {
		err = g.decode(ctx, logits, room)
	}
	g.res.Metrics.DecodeSeconds = time.Since(t1).Seconds()
	g.res.Metrics.GeneratedTokens = len(g.res.Tokens)
	return g.res, err
}

// reserve grows the KV caches of the engine's States so that n more
// tokens and a verify block fit (at most reserveMax), so that a reply
// does not copy them as they fill: on the VM of BENCHMARKS.md a copy
// into fresh memory stalled forge-tiny's verify block at ~317 tokens for
// 1.5 ms (~280 µs otherwise).
func (e *Engine) reserve(n int) {
	n = min(n+MaxDraftK+1, reserveMax)
	e.s.Reserve(n)
	if d := e.draft; d != nil {
		d.s.Reserve(n)
	}
}

// reserveMax is the most tokens reserve makes room for: a longer reply's
// caches grow as they fill.
const reserveMax = 4096

// check validates req and returns how many tokens the reply may have.
func (e *Engine) check(req *Request) (int, error) {
	cfg := e.m.Config()
	n := len(req.Prompt)
	if n == 0 {
		return 0, errors.New("the prompt is empty")
	}
	if err := e.m.CheckIDs(req.Prompt); err != nil {
		return 0, fmt.Errorf("prompt: %w", err)
	}
	if err := req.Sample.Validate(); err != nil {
		return 0, err
	}
	if req.MaxTokens < 0 {
		return 0, fmt.Errorf("max tokens %d is negative", req.MaxTokens)
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs {
		return 0, fmt.Errorf("top logprobs %d: want 0 to %d", req.TopLogprobs, MaxTopLogprobs)
	}
	room := DefaultMaxTokens
	if cfg.MaxContext > 0 {
		if n >= cfg.MaxContext {
			return 0, fmt.Errorf("a prompt of %d tokens leaves no room to generate: %w of %d tokens", n, model.ErrContext, cfg.MaxContext)
		}
		room = cfg.MaxContext - n
	}
	if req.MaxTokens > 0 && req.MaxTokens <= room {
		return req.MaxTokens, nil
	}
	return room, nil
}

// stopSet holds the ids that end a reply.
func (e *Engine) stopSet(extra []int) map[int]bool {
	set := map[int]bool{}
	for _, id := range e.tok.EOS() {
		set[id] = true
	}
	for _, id := range extra {
		set[id] = true
	}
	return set
}

// thinkOpen reports whether text has not closed its thinking.
func thinkOpen(text string) bool { return !strings.Contains(text, "</think>") }
