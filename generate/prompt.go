package generate

import (
	"encoding/json"
	"errors"
	"fmt"

	"forge/tokenizer"
)

// TextPrompt returns the ids of a plain-text prompt (no template): it must
// be non-empty, valid UTF-8 text.
func TextPrompt(tok *tokenizer.Tokenizer, text string) ([]int, error) {
	if text == "" {
		return nil, errors.New("the prompt is empty")
	}
	ids, err := tok.EncodeChecked(text)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	return ids, nil
}

// Chat is a conversation to continue: the messages and tools as the
// OpenAI API sends them, and whether the model should think first.
type Chat struct {
	Messages json.RawMessage // a JSON list of {role, content, ...}
	Tools    json.RawMessage // a JSON list of tool schemas, or nil
	Think    bool            // enable_thinking
	// Kwargs are further chat-template variables (reasoning_effort,
	// preserve_thinking, …); enable_thinking here is overridden by Think.
	Kwargs map[string]any
}

// Prompt returns the ids of Render's text.
func (c Chat) Prompt(tok *tokenizer.Tokenizer) ([]int, error) {
	text, err := c.Render(tok)
	if err != nil {
		return nil, err
	}
	return TextPrompt(tok, text)
}

// Render renders the conversation with the tokenizer's chat template and the
// assistant's generation prompt (tool-call arguments sent as JSON strings are
// decoded first, as the OpenAI API sends them). A tokenizer without a chat
// template is an error (tokenizer.ErrNoTemplate).
func (c Chat) Render(tok *tokenizer.Tokenizer) (string, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(c.Messages, &msgs); err != nil {
		return "", fmt.Errorf("messages: not a JSON list of messages: %w", err)
	}
	if len(msgs) == 0 {
		return "", errors.New("messages: the list is empty")
	}
	kw := map[string]any{}
	for k, v := range c.Kwargs {
		kw[k] = v
	}
	kw["enable_thinking"] = c.Think
	kwargs, err := json.Marshal(kw)
	if err != nil {
		return "", fmt.Errorf("chat template variables: %w", err)
	}
	return tok.Chat(c.Messages, tokenizer.ChatOptions{
		Tools: c.Tools, AddGenerationPrompt: true, Kwargs: kwargs, ParseArguments: true,
	})
}
