package forge_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"forge"
	"forge/safetensors"
)

// TestLogitsGolden runs the logits job on the fixture's three sequences (a
// list of lists) in both modes and compares the file it writes with the
// independent reference's logits (tolerance 1e-3: the fixture README's fair
// bound for fp32 code).
func TestLogitsGolden(t *testing.T) {
	fx := filepath.Join("testdata", "qwen35-tiny-random")
	g, err := safetensors.Open(filepath.Join(fx, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var seqs [][]int32
	for i := range 3 {
		v, err := g.Int32("tokens_" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, v)
	}
	dir := t.TempDir()
	tokPath := filepath.Join(dir, "tokens.json")
	b, _ := json.Marshal(seqs)
	os.WriteFile(tokPath, b, 0o644)
	for _, decode := range []bool{false, true} {
		out := filepath.Join(dir, "out-"+strconv.FormatBool(decode)+".safetensors")
		rep, err := forge.Logits(context.Background(), forge.LogitsConfig{Model: fx, Tokens: tokPath, Out: out, Decode: decode})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Sequences) != 3 {
			t.Fatalf("%d sequences reported", len(rep.Sequences))
		}
		f, err := safetensors.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			s := strconv.Itoa(i)
			got, err := f.Float32("logits_" + s)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := g.Float32("logits_" + s)
			info, _ := f.Info("logits_" + s)
			if info.Shape[0] != len(seqs[i]) || info.Shape[1] != 512 {
				t.Errorf("logits_%s shape %v", s, info.Shape)
			}
			var d float64
			for j := range want {
				d = max(d, math.Abs(float64(got[j]-want[j])))
			}
			if d > 1e-3 || len(got) != len(want) {
				t.Errorf("decode=%v logits_%s: max |Δ| %.3g", decode, s, d)
			}
			toks, _ := f.Int32("tokens_" + s)
			if len(toks) != len(seqs[i]) || toks[0] != seqs[i][0] {
				t.Errorf("tokens_%s not stored", s)
			}
		}
		f.Close()
	}
}

// TestLogitsSingleList: a flat list gives tensors named logits/tokens.
func TestLogitsSingleList(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "t.json")
	os.WriteFile(tok, []byte("[1, 2, 3]\n"), 0o644)
	out := filepath.Join(dir, "o.safetensors")
	if _, err := forge.Logits(context.Background(), forge.LogitsConfig{Model: filepath.Join("testdata", "qwen35-tiny-random"), Tokens: tok, Out: out}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if names := strings.Join(f.Names(), ","); names != "logits,tokens" {
		t.Errorf("tensors %s", names)
	}
}

// TestLogitsBadTokens: malformed token files are refused naming the file,
// and no output appears.
func TestLogitsBadTokens(t *testing.T) {
	cases := map[string]string{
		"not json":     `[1, 2`,
		"strings":      `["a"]`,
		"empty":        `[]`,
		"empty inner":  `[[1], []]`,
		"out of range": `[1, 512]`,
		"negative":     `[[3], [-1]]`,
		"float":        `[1.5]`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tok := filepath.Join(dir, "tokens.json")
			os.WriteFile(tok, []byte(body), 0o644)
			out := filepath.Join(dir, "o.safetensors")
			_, err := forge.Logits(context.Background(), forge.LogitsConfig{Model: filepath.Join("testdata", "qwen35-tiny-random"), Tokens: tok, Out: out})
			if err == nil || !strings.Contains(err.Error(), "tokens.json") {
				t.Errorf("error %v does not name the file", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Error("output written")
			}
		})
	}
}

func TestInspectForgeTiny(t *testing.T) {
	in, err := forge.Inspect(filepath.Join("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	// models/forge-tiny/README.md: 8,419,592 parameters.
	if in.Params != 8_419_592 {
		t.Errorf("params %d, want 8,419,592", in.Params)
	}
	if in.DeltaNet != 6 || in.Attention != 2 {
		t.Errorf("layers %d/%d", in.DeltaNet, in.Attention)
	}
	var sum int64
	for _, p := range in.Parts {
		sum += p.Params
	}
	if sum != in.Params || in.Bytes != 2*in.Params {
		t.Errorf("parts sum %d, bytes %d for %d bf16 params", sum, in.Bytes, in.Params)
	}
}
