package lcpp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"forge/tokenizer"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBOS: the BOS rule follows tokenizer_config.json's add_bos_token,
// the flag llama.cpp's converter copies into tokenizer.ggml.add_bos_token;
// a model without tokenizer_config.json adds none.
func TestBOS(t *testing.T) {
	tiny := filepath.Join("..", "..", "models", "forge-tiny")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), readFile(t, filepath.Join(tiny, "tokenizer.json")), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := BOS(dir, tok); got != -1 || err != nil {
		t.Errorf("no tokenizer_config.json: %d, %v; want -1", got, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(tiny, "tokenizer_config.json")), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		add    any // add_bos_token; nil: absent
		bos    any // bos_token
		want   int
		errors bool
	}{
		{"forge-tiny: false, no BOS", false, nil, -1, false},
		{"absent", nil, "<|endoftext|>", -1, false},
		{"true with a BOS", true, "<|endoftext|>", 4096, false},
		{"true without a BOS", true, nil, 0, true},
	} {
		cfg["bos_token"] = c.bos
		delete(cfg, "add_bos_token")
		if c.add != nil {
			cfg["add_bos_token"] = c.add
		}
		data, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := BOS(dir, tok)
		if (err != nil) != c.errors || (err == nil && got != c.want) {
			t.Errorf("%s: %d, %v; want %d (error %v)", c.name, got, err, c.want, c.errors)
		}
	}
}

// TestHeaderModel: a base records its model as model_kind and
// model_fingerprint; bases written before model_kind spelled a bundle's
// fingerprint "bundle:" + digest and a checkpoint's bare, and read back the
// same as the new spelling. A base through a real file keeps the keys.
func TestHeaderModel(t *testing.T) {
	const d = "6ebb5a2c74d45a8ffbf5cb00ede261d05b19a57444e4b3fe3ea0bd09515f6e41"
	for _, c := range []struct {
		name     string
		meta     map[string]string
		kind, fp string
	}{
		{"bundle, today", map[string]string{"model_kind": "bundle", "model_fingerprint": d}, "bundle", d},
		{"bundle, old spelling", map[string]string{"model_fingerprint": "bundle:" + d}, "bundle", d},
		{"checkpoint, today", map[string]string{"model_kind": "checkpoint", "model_fingerprint": d}, "checkpoint", d},
		{"checkpoint, old spelling", map[string]string{"model_fingerprint": d}, "checkpoint", d},
		{"no provenance (llama.cpp's layout)", nil, "", ""},
	} {
		h := Header{Meta: c.meta}
		if kind, fp := h.Model(); kind != c.kind || fp != c.fp {
			t.Errorf("%s: %q %q, want %q %q", c.name, kind, fp, c.kind, c.fp)
		}
	}
	path := filepath.Join(t.TempDir(), "old.base")
	h := Header{NCtx: 8, NVocab: 7, NChunk: 1, Tokens: make([]int, 8), BOS: -1,
		Meta: map[string]string{"model": "m", "model_fingerprint": "bundle:" + d}}
	w, err := Create(path, h, Forge)
	if err != nil {
		t.Fatal(err)
	}
	var win BaseWindow
	win.Resize(h.Scored(), h.NVocab)
	if err := w.WriteWindow(&win); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if kind, fp := b.Model(); kind != "bundle" || fp != d {
		t.Errorf("old-spelling base from a file: %q %q", kind, fp)
	}
}
