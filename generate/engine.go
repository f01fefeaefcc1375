package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
}

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
	Metrics   Metrics
}

// Options configure an Engine; the zero value is the default.
type Options struct {
	Chunk int       // prefill chunk (0: model.DefaultChunk)
	KV    model.KV  // the State's KV cache format
	Act   model.Act // the State's activation precision (model.ActInt8: decode steps in int8)
}

// Engine generates replies from one Model for one conversation at a time:
// it owns a State (the live conversation) and a turn snapshot, reused by
// the next Generate when its prompt extends them. An Engine is not safe
// for concurrent use; several Engines may share one Model.
type Engine struct {
	m        *model.Model
	tok      *tokenizer.Tokenizer
	opts     Options
	s        *model.State
	fed      []int // the tokens s has consumed
	turn     []int // the prompt prefix the turn snapshot holds (nil: none)
	turnMark model.Mark
	breakers *sample.Breakers
	turnID   int // <|im_start|>, −1 if the tokenizer has none
}

// New returns an Engine for m, whose tokenizer is tok.
func New(m *model.Model, tok *tokenizer.Tokenizer, o Options) *Engine {
	e := &Engine{m: m, tok: tok, opts: o, s: m.NewStateKV(o.KV), turnID: -1}
	e.s.SetAct(o.Act)
	vocab := m.Config().Vocab
	e.breakers = sample.NewBreakers(vocab, func(id int) string {
		s, _ := tok.Decode([]int{id})
		return s
	})
	if ids := tok.Encode("<|im_start|>"); len(ids) == 1 {
		e.turnID = ids[0]
	}
	return e
}

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// Tokenizer returns the engine's tokenizer.
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// Reset forgets the conversation: the next Generate starts cold.
func (e *Engine) Reset() {
	e.s.Reset()
	e.fed = e.fed[:0]
	e.turn = nil
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
	t0 := time.Now()
	logits, err := e.prefill(ctx, req.Prompt, &g.res.Metrics)
	if err != nil {
		return Result{}, err
	}
	g.res.Metrics.PrefillSeconds = time.Since(t0).Seconds()
	t1 := time.Now()
	err = g.decode(ctx, logits, room)
	g.res.Metrics.DecodeSeconds = time.Since(t1).Seconds()
	g.res.Metrics.GeneratedTokens = len(g.res.Tokens)
	return g.res, err
}

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

// prefill brings the State to the end of prompt, reusing what it can, and
// returns the last prompt token's logits.
func (e *Engine) prefill(ctx context.Context, prompt []int, mt *Metrics) ([]float32, error) {
	mt.PromptTokens = len(prompt)
	switch {
	case len(e.fed) > 0 && len(e.fed) < len(prompt) && slices.Equal(e.fed, prompt[:len(e.fed)]) && len(e.fed) >= len(e.turn):
		// continue from the live state
	case e.turn != nil && len(e.turn) < len(prompt) && slices.Equal(e.turn, prompt[:len(e.turn)]):
		e.s.Rewind(e.turnMark)
		e.fed = append(e.fed[:0], e.turn...)
	default:
		e.Reset()
	}
	mt.CachedTokens = len(e.fed)
	// The turn snapshot sits just before the prompt's last turn-start
	// token: a later prompt that re-renders this turn's reply differently
	// (without its thinking, say) still shares everything before it.
	if cut := lastIndex(prompt, e.turnID); cut > 0 && cut >= len(e.fed) {
		if cut > len(e.fed) {
			if _, err := e.m.PrefillLast(ctx, e.s, prompt[len(e.fed):cut], e.opts.Chunk); err != nil {
				e.Reset()
				return nil, err
			}
			e.fed = append(e.fed, prompt[len(e.fed):cut]...)
		}
		if !slices.Equal(e.turn, e.fed) {
			e.snapshotTurn()
		}
	}
	logits, err := e.m.PrefillLast(ctx, e.s, prompt[len(e.fed):], e.opts.Chunk)
	if err != nil {
		e.Reset() // a cancelled or failed prefill leaves the State unusable
		return nil, err
	}
	e.fed = append(e.fed, prompt[len(e.fed):]...)
	mt.PrefillTokens = len(prompt) - mt.CachedTokens
	return logits, nil
}

// snapshotTurn replaces the turn snapshot with the State as it is now.
func (e *Engine) snapshotTurn() {
	if e.turn != nil {
		e.s.Forget(e.turnMark)
	}
	e.turnMark = e.s.Mark()
	e.turn = slices.Clone(e.fed)
}

func lastIndex(ids []int, id int) int {
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] == id {
			return i
		}
	}
	return -1
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
