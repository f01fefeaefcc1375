package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"forge/tokenizer"
)

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
