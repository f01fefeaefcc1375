package forge

import (
	"errors"
	"fmt"
	"path/filepath"

	"forge/bundle"
	"forge/generate"
	"forge/model"
	"forge/sample"
	"forge/source"
	"forge/tokenizer"
)

// Runtime is a model opened for generation: a checkpoint or bundle, its
// tokenizer and an Engine holding one conversation (built at first use).
// Close releases the mapped weights.
type Runtime struct {
	Model *model.Model
	Tok   *tokenizer.Tokenizer
	Name  string   // the directory's base name
	Draft *Drafter // the drafter of speculative decoding (AttachDraft), or nil
	// Warnings are what a user should know about how the model (and the
	// drafter) will run: layoutWarnings' findings.
	Warnings []string
	opts     generate.Options
	src      source.Source
	eng      *generate.Engine // Engine's, nil until its first call
}

// Drafter is a draft model attached to a Runtime, and its identity.
type Drafter struct {
	Model       *model.Model
	Name        string // the directory's base name
	Kind        string // checkpoint or bundle (source.Fingerprint)
	Fingerprint string // its model fingerprint
	Tokenizer   string // its tokenizer's fingerprint (the target's: CheckDraft)
	K           int    // the most tokens it drafts per target call
	src         source.Source
}

// OpenRuntime loads the checkpoint or bundle in dir (weights mapped, not
// copied) with the tokenizer beside it; its engine runs with o (KV cache
// format, activation precision).
func OpenRuntime(dir string, o generate.Options) (*Runtime, error) {
	m, src, err := source.Load(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: tokenizer: %w", dir, err)
	}
	if v := m.Config().Vocab; tok.VocabSize() > v {
		src.Close()
		return nil, fmt.Errorf("%s: the tokenizer has %d ids but the model only %d", dir, tok.VocabSize(), v)
	}
	return &Runtime{Model: m, Tok: tok,
		Name: filepath.Base(filepath.Clean(dir)), Warnings: layoutWarnings(dir, src), opts: o, src: src}, nil
}

// layoutWarnings returns a warning for a bundle whose index arrays do not
// start on cache lines (bundle.Bundle.Misaligned: written before the
// writer aligned them), which decodes slower than it would written again.
func layoutWarnings(dir string, src source.Source) []string {
	b, ok := src.(*bundle.Bundle)
	if !ok {
		return nil
	}
	if n, of := b.Misaligned(); n > 0 {
		return []string{fmt.Sprintf("%s: %d of %d index arrays do not start on a 64-byte cache line (a bundle written before 2026-12-04); "+
			"decode may run up to ~30%% slower than with the same bundle written again by forge quantize", dir, n, of)}
	}
	return nil
}

// AttachDraft loads the checkpoint or bundle in dir as the drafter of the
// runtime's replies (speculative decoding, at most k tokens per target
// call; 0: generate.DefaultDraftK): its vocabulary and tokenizer must give
// every id the target's meaning (generate.CheckDraft), and k must be in
// 1…16; fixed makes every round draft k tokens. An engine already built
// is dropped, so the conversation starts afresh.
func (r *Runtime) AttachDraft(dir string, k int, fixed bool) error {
	if k == 0 {
		k = generate.DefaultDraftK
	}
	if err := generate.CheckDraftK(k); err != nil {
		return fmt.Errorf("drafter: %w", err)
	}
	m, src, err := source.Load(dir)
	if err != nil {
		return fmt.Errorf("drafter: %w", err)
	}
	d := &Drafter{Model: m, Name: filepath.Base(filepath.Clean(dir)), K: k, src: src}
	fail := func(err error) error { src.Close(); return fmt.Errorf("drafter %s: %w", dir, err) }
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fail(fmt.Errorf("tokenizer: %w", err))
	}
	if err := generate.CheckDraft(r.Model, r.Tok, m, tok); err != nil {
		return fail(err)
	}
	if d.Kind, d.Fingerprint, err = source.Fingerprint(src); err != nil {
		return fail(err)
	}
	d.Tokenizer = tok.Fingerprint()
	r.Warnings = append(r.Warnings, layoutWarnings(dir, src)...)
	if r.Draft != nil {
		r.Draft.src.Close()
	}
	r.Draft = d
	r.opts.Draft, r.opts.DraftK, r.opts.DraftFixed = m, k, fixed
	r.eng = nil
	return nil
}

// Engine returns the runtime's engine, built (generate.New, which warms
// its States unless the options say NoWarm) at the first call, with the
// drafter attached by then: a runtime that attaches a drafter before it
// generates builds and warms one engine, and one that only lends its
// model and tokenizer to engines of their own (forge serve's slots,
// forge ab's cold runs) builds none.
func (r *Runtime) Engine() *generate.Engine {
	if r.eng == nil {
		r.eng = generate.New(r.Model, r.Tok, r.opts)
	}
	return r.eng
}

// Close releases the model's files (and the drafter's).
func (r *Runtime) Close() error {
	if r.Draft != nil {
		r.Draft.src.Close()
	}
	return r.src.Close()
}

// Prompt is what a reply answers: a plain text (no template), or a
// conversation rendered with the model's chat template.
type Prompt struct {
	Text     string // plain text
	Messages []byte // a JSON list of messages (chat template); exclusive with Text
	Tools    []byte // JSON tool schemas for Messages, or nil
	Think    bool   // enable_thinking for Messages
	Name     string // where Messages came from, for errors
}

// Tokens returns the prompt's ids.
func (r *Runtime) Tokens(p Prompt) ([]int, error) {
	text, err := r.Render(p)
	if err != nil {
		return nil, err
	}
	return generate.TextPrompt(r.Tok, text)
}

// Render returns the prompt's text: Text as it is, or Messages rendered
// with the chat template and the assistant's generation prompt.
func (r *Runtime) Render(p Prompt) (string, error) {
	switch {
	case p.Text != "" && p.Messages != nil:
		return "", errors.New("a prompt is a text or messages, not both")
	case p.Messages != nil:
		text, err := generate.Chat{Messages: p.Messages, Tools: p.Tools, Think: p.Think}.Render(r.Tok)
		if err != nil && p.Name != "" {
			err = fmt.Errorf("%s: %w", p.Name, err)
		}
		return text, err
	}
	return p.Text, nil
}

// DefaultSampling returns the reference's sampling defaults for a reply
// with thinking on or off (generate.DefaultSampling).
func DefaultSampling(think bool) sample.Options { return generate.DefaultSampling(think) }

// ThinkBudget is the reference's thinking-budget policy (generate.ThinkBudget).
func ThinkBudget(budget, maxTokens int) int { return generate.ThinkBudget(budget, maxTokens) }
