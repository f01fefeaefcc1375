package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Load reads a Hugging Face tokenizer directory: tokenizer.json (required), and when present
// tokenizer_config.json (special tokens, chat_template), chat_template.jinja (which takes
// precedence over the config's template, as in transformers), additional_chat_templates/*.jinja
// (named templates) and generation_config.json (eos/bos/pad ids).
func Load(dir string) (*Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", dir, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: tokenizer.json: %w", dir, err)
	}
	if err := t.loadConfig(dir); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", dir, err)
	}
	return t, nil
}

// readOptional returns the file's contents, or nil if it does not exist.
func readOptional(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// specialTokens holds the named special tokens of tokenizer_config.json and the ids of
// generation_config.json.
type specialTokens struct {
	vars       map[string]string // "bos_token", "eos_token", ... → content, for templates
	additional []string          // additional_special_tokens
	bos, pad   int               // -1 when unset
	eos        []int
}

// configJSON is the part of tokenizer_config.json that forge reads.
type configJSON struct {
	ChatTemplate            json.RawMessage   `json:"chat_template"`
	AdditionalSpecialTokens []json.RawMessage `json:"additional_special_tokens"`
}

// specialNames are the special-token attributes transformers passes to chat templates.
var specialNames = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// tokenContent reads a special token written as a string, null or an object with "content".
func tokenContent(raw json.RawMessage) (string, bool, error) {
	if isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("special token %s is neither a string nor {\"content\": ...}", raw)
	}
	return *obj.Content, true, nil
}

func (t *Tokenizer) loadConfig(dir string) error {
	data, err := readOptional(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return err
	}
	var cfg configJSON
	if data != nil {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("tokenizer_config.json: %w", err)
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("tokenizer_config.json: %w", err)
		}
		for _, name := range specialNames {
			c, ok, err := tokenContent(fields[name])
			if err != nil {
				return fmt.Errorf("tokenizer_config.json: %s: %w", name, err)
			}
			if ok {
				t.specials.vars[name] = c
			}
		}
		for _, raw := range cfg.AdditionalSpecialTokens {
			c, ok, err := tokenContent(raw)
			if err != nil {
				return fmt.Errorf("tokenizer_config.json: additional_special_tokens: %w", err)
			}
			if ok {
				t.specials.additional = append(t.specials.additional, c)
			}
		}
	}
	if err := t.chat.load(dir, cfg.ChatTemplate); err != nil {
		return err
	}
	return t.loadGenerationConfig(dir)
}

// idList reads an id written as a number, a list of numbers or null.
func idList(raw json.RawMessage) ([]int, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("%s is neither an id nor a list of ids", raw)
	}
	return many, nil
}

func (t *Tokenizer) loadGenerationConfig(dir string) error {
	sp := &t.specials
	data, err := readOptional(filepath.Join(dir, "generation_config.json"))
	if err != nil {
		return err
	}
	var gen struct {
		BOS json.RawMessage `json:"bos_token_id"`
		EOS json.RawMessage `json:"eos_token_id"`
		PAD json.RawMessage `json:"pad_token_id"`
	}
	if data != nil {
		if err := json.Unmarshal(data, &gen); err != nil {
			return fmt.Errorf("generation_config.json: %w", err)
		}
	}
	ids := map[string][]int{}
	for name, raw := range map[string]json.RawMessage{"bos_token_id": gen.BOS, "eos_token_id": gen.EOS, "pad_token_id": gen.PAD} {
		if ids[name], err = idList(raw); err != nil {
			return fmt.Errorf("generation_config.json: %s: %w", name, err)
		}
	}
	sp.eos = ids["eos_token_id"]
	lookup := func(name string) int {
		if c, ok := sp.vars[name]; ok {
			if id, ok := t.TokenID(c); ok {
				return id
			}
		}
		return -1
	}
	if id := lookup("eos_token"); id >= 0 && !slices.Contains(sp.eos, id) {
		sp.eos = append(sp.eos, id)
	}
	sp.bos, sp.pad = lookup("bos_token"), lookup("pad_token")
	if b := ids["bos_token_id"]; sp.bos < 0 && len(b) > 0 {
		sp.bos = b[0]
	}
	if p := ids["pad_token_id"]; sp.pad < 0 && len(p) > 0 {
		sp.pad = p[0]
	}
	return nil
}

// EOS returns the ids that end generation: generation_config.json's eos_token_id (in order),
// then tokenizer_config.json's eos_token if not already listed.
func (t *Tokenizer) EOS() []int { return slices.Clone(t.specials.eos) }

// BOS returns the beginning-of-sequence id (tokenizer_config.json's bos_token, else
// generation_config.json's bos_token_id), if any.
func (t *Tokenizer) BOS() (int, bool) { return t.specials.bos, t.specials.bos >= 0 }

// PAD returns the padding id (tokenizer_config.json's pad_token, else generation_config.json's
// pad_token_id), if any.
func (t *Tokenizer) PAD() (int, bool) { return t.specials.pad, t.specials.pad >= 0 }

// IsEOS reports whether id is one of EOS().
func (t *Tokenizer) IsEOS(id int) bool { return slices.Contains(t.specials.eos, id) }

// templateFiles returns the named templates of additional_chat_templates/*.jinja.
func templateFiles(dir string) (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "additional_chat_templates", "*.jinja"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(p), ".jinja")] = string(data)
	}
	return out, nil
}
