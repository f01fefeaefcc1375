package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"forge/tokenizer"
)

// TokenizeCmd is `forge tokenize --model DIR [TEXT | -]`.
type TokenizeCmd struct {
	Model string `required:"" type:"existingdir" help:"Model or tokenizer directory (tokenizer.json, tokenizer_config.json, ...)."`
	JSONL bool   `name:"jsonl" help:"Read one JSON string per line (from the file TEXT, or stdin when TEXT is - or absent) and print one JSON id list per line."`
	Text  string `arg:"" optional:"" help:"Text to encode; - reads stdin verbatim (a trailing newline included)."`
}

func (c *TokenizeCmd) Run() error {
	tok, err := tokenizer.Load(c.Model)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	if c.JSONL {
		err = c.jsonl(tok, out)
	} else {
		var text []byte
		if text, err = argOrStdin(c.Text, "TEXT"); err == nil {
			err = writeIDs(out, tok.Encode(string(text)))
		}
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// jsonl encodes every line of the input, a JSON string, into a JSON list of ids.
func (c *TokenizeCmd) jsonl(tok *tokenizer.Tokenizer, out io.Writer) error {
	in := io.Reader(os.Stdin)
	name := "stdin"
	if c.Text != "" && c.Text != "-" {
		f, err := os.Open(c.Text)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, c.Text
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<30)
	var ids []int
	for line := 1; sc.Scan(); line++ {
		var text string
		if err := json.Unmarshal(sc.Bytes(), &text); err != nil {
			return fmt.Errorf("%s line %d: want a JSON string: %w", name, line, err)
		}
		ids = tok.EncodeAppend(ids[:0], text)
		if err := writeIDs(out, ids); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// DetokenizeCmd is `forge detokenize --model DIR [IDS_JSON | -]`.
type DetokenizeCmd struct {
	Model string `required:"" type:"existingdir" help:"Model or tokenizer directory."`
	IDs   string `arg:"" optional:"" name:"ids" help:"JSON list of token ids; - reads it from stdin."`
}

func (c *DetokenizeCmd) Run() error {
	tok, err := tokenizer.Load(c.Model)
	if err != nil {
		return err
	}
	raw, err := argOrStdin(c.IDs, "IDS")
	if err != nil {
		return err
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		return fmt.Errorf("ids: want a JSON list of integers: %w", err)
	}
	text, err := tok.Decode(ids)
	if err != nil {
		return err
	}
	_, err = io.WriteString(os.Stdout, text)
	return err
}

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
	var msgs []byte
	if c.Messages == "-" {
		msgs, err = argOrStdin(c.Messages, "--messages")
	} else {
		msgs, err = os.ReadFile(c.Messages)
	}
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
		if opts.Tools, err = os.ReadFile(c.Tools); err != nil {
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
		if err := writeIDs(out, tok.Encode(prompt)); err != nil {
			return err
		}
		return out.Flush()
	}
	_, err = io.WriteString(os.Stdout, prompt)
	return err
}

// argOrStdin returns arg's bytes, or all of stdin when arg is "-".
func argOrStdin(arg, name string) ([]byte, error) {
	switch arg {
	case "":
		return nil, errors.New(name + ": give it as an argument, or - to read stdin")
	case "-":
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
		return data, nil
	}
	return []byte(arg), nil
}

// writeIDs writes ids as a JSON list and a newline.
func writeIDs(w io.Writer, ids []int) error {
	if ids == nil {
		ids = []int{}
	}
	data, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
