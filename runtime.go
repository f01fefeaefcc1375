package forge

import (
	"errors"
	"fmt"
	"path/filepath"

	"forge/generate"
	"forge/model"
	"forge/sample"
	"forge/source"
	"forge/tokenizer"
)

// Runtime is a model opened for generation: a checkpoint or bundle, its
// tokenizer and an Engine holding one conversation. Close releases the
// mapped weights.
type Runtime struct {
	Engine *generate.Engine
	Model  *model.Model
	Tok    *tokenizer.Tokenizer
	Name   string // the directory's base name
	src    source.Source
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
	return &Runtime{Engine: generate.New(m, tok, o), Model: m, Tok: tok,
		Name: filepath.Base(filepath.Clean(dir)), src: src}, nil
}

// Close releases the model's files.
func (r *Runtime) Close() error { return r.src.Close() }

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
