package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"forge/tokenizer"
)

// TemplateCmd is `forge template --model DIR --messages MESSAGES.json [...]`.
type TemplateCmd struct {
	Model               string `required:"" type:"existingdir" help:"Model or tokenizer directory with a chat template."`
	Messages            string `required:"" help:"JSON file (- for stdin) holding the list of messages, or an object with \"messages\" (and \"tools\")."`
	Tools               string `type:"existingfile" help:"JSON file holding the list of tool schemas."`
	AddGenerationPrompt bool   `help:"End with the start of an assistant turn."`
	Kwargs              string `help:"Extra template variables as a JSON object, e.g. '{\"enable_thinking\": false}'."`
	Name                string `name:"name" help:"Which of several named chat templates to use."`
	ParseArguments      bool   `help:"Decode tool-call arguments given as JSON strings before rendering (as vLLM does; Qwen3.5's template needs objects)."`
	IDs                 bool   `name:"ids" help:"Print the token ids of the rendered prompt (JSON) instead of its text."`
}

func (c *TemplateCmd) Run() error {
	tok, err := tokenizer.Load(c.Model)
	if err != nil {
		return err
	}
	msgs, err := readLimited(c.Messages, tokenizer.DefaultChatMaxBytes)
	if err != nil {
		return err
	}
	opts := tokenizer.ChatOptions{AddGenerationPrompt: c.AddGenerationPrompt, Template: c.Name, ParseArguments: c.ParseArguments}
	if trimmed := bytes.TrimSpace(msgs); len(trimmed) > 0 && trimmed[0] == '{' {
		var req struct {
			Messages json.RawMessage `json:"messages"`
			Tools    json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(trimmed, &req); err != nil {
			return fmt.Errorf("%s: %w", c.Messages, err)
		}
		msgs, opts.Tools = req.Messages, req.Tools
	}
	if c.Tools != "" {
		if opts.Tools, err = readLimited(c.Tools, tokenizer.DefaultChatMaxBytes); err != nil {
			return err
		}
	}
	if c.Kwargs != "" {
		opts.Kwargs = json.RawMessage(c.Kwargs)
	}
	prompt, err := tok.Chat(msgs, opts)
	if err != nil {
		return err
	}
	if c.IDs {
		out := bufio.NewWriter(os.Stdout)
		if err := writeIDs(out, tok, prompt); err != nil {
			return fmt.Errorf("rendered prompt: %w", err)
		}
		return out.Flush()
	}
	_, err = io.WriteString(os.Stdout, prompt)
	return err
}

// readLimited reads the file path (- for stdin), refusing one over limit bytes with an error
// wrapping tokenizer.ErrLimit, before reading further.
func readLimited(path string, limit int) ([]byte, error) {
	r, name := io.Reader(os.Stdin), "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: over %d bytes: %w", name, limit, tokenizer.ErrLimit)
	}
	return data, nil
}
