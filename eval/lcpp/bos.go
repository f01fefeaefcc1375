package lcpp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"forge/internal/budget"
	"forge/tokenizer"
)

// BOS returns the id llama.cpp would put first in the text and in each
// window for the model in dir, or −1 for none. llama.cpp adds a BOS when
// its vocabulary's tokenizer.ggml.add_bos_token is true;
// convert_hf_to_gguf.py copies that flag from tokenizer_config.json's
// "add_bos_token", so BOS reads the same field: true means tok's BOS
// (tokenizer.BOS) is added, and a missing BOS is then an error; false or
// absent (or no tokenizer_config.json) means none. Qwen tokenizers
// (forge-tiny included) say false and have no BOS token.
func BOS(dir string, tok *tokenizer.Tokenizer) (int, error) {
	data, err := budget.ReadFile(filepath.Join(dir, "tokenizer_config.json"), budget.MaxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("tokenizer %s: %w", dir, err)
	}
	var cfg struct {
		AddBOS *bool `json:"add_bos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return 0, fmt.Errorf("tokenizer %s: tokenizer_config.json: %w", dir, err)
	}
	if cfg.AddBOS == nil || !*cfg.AddBOS {
		return -1, nil
	}
	id, ok := tok.BOS()
	if !ok {
		return 0, fmt.Errorf("tokenizer %s: tokenizer_config.json sets add_bos_token but names no BOS token", dir)
	}
	return id, nil
}

// Model returns the model a forge base was computed with, as its writer
// recorded it (TraceLCPP: the keys model_kind and model_fingerprint, the
// fingerprint as package source computes it). Bases written before
// model_kind was recorded spelled a bundle's fingerprint "bundle:" + digest
// and a checkpoint's as the bare digest; Model reads that spelling too, so
// old and new bases of one model give the same kind and fingerprint.
// A llama.cpp base, or a forge base without provenance, gives "", "".
func (h *Header) Model() (kind, fingerprint string) {
	kind, fp := h.Meta["model_kind"], h.Meta["model_fingerprint"]
	if kind != "" || fp == "" {
		return kind, fp
	}
	if d, ok := strings.CutPrefix(fp, "bundle:"); ok {
		return "bundle", d
	}
	return "checkpoint", fp
}
