package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/eval/lcpp"
)

// lcppCtx keeps the model runs short: windows of 128 tokens, 63 scored each.
const lcppCtx = 128

// lcppText writes the first ~1,700 bytes of testdata/calib/code.txt (whole
// lines; ≈ 620 forge-tiny tokens, so 4 windows of 128 and 252 scored
// positions, above llama.cpp's 100 for statistics) to a file in dir.
func lcppText(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "calib", "code.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cut := 1700 + bytes.IndexByte(data[1700:], '\n') + 1
	path := filepath.Join(dir, "code-head.txt")
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLCPPForgeTiny runs the llama.cpp-compatible mode end to end on
// forge-tiny: the model against its own compressed base (the uint16
// floor), a RTN LUT4 candidate (a real divergence), and the same base
// written in llama.cpp's binary layout (identical numbers).
func TestLCPPForgeTiny(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tiny := filepath.Join("models", "forge-tiny")
	text := lcppText(t, dir)
	base := filepath.Join(dir, "base.safetensors")
	if err := TraceLCPP(ctx, LCPPTraceConfig{Model: tiny, Data: text, Out: base, Ctx: lcppCtx}); err != nil {
		t.Fatal(err)
	}
	var printed bytes.Buffer
	jsonPath := filepath.Join(dir, "self.json")
	self, err := EvalLCPP(ctx, LCPPEvalConfig{Trace: base, Model: tiny, Out: &printed, JSON: jsonPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self: %d windows, N %d, mean KL %.3g ± %.2g, max %.3g, PPL %.4f vs %.4f, same top %.4f",
		self.NChunk, self.N, self.KLD.Value, self.KLD.Unc, self.KLDPercentiles[0].Value,
		self.PPL.Value, self.PPLBase.Value, self.SameTop.Value)
	if self.NChunk < 2 || self.N != self.NChunk*(lcppCtx-1-lcppCtx/2) || !self.Enough {
		t.Fatalf("%d windows, %d positions", self.NChunk, self.N)
	}
	// The floor of the uint16 store: each base log-probability is off by at
	// most scale/2 ≤ 16/65535/2 = 1.22e-4 nats, so with Q = B the KL sum
	// Σ p̃(log p̃ − log p) is within 1.22e-4·(1 + 1.22e-4) of zero, and so
	// is nll_Q − nll_B. (llama.cpp's documented ≈ 5e-4 comes from its
	// backend's run-to-run differences on top of this floor; forge's
	// forward pass is deterministic, so only the compression remains.)
	const floor = 16.0 / 65535 / 2 * 1.001
	if math.Abs(self.KLD.Value) > floor || math.Abs(self.LnPPLRatio.Value) > floor {
		t.Errorf("self comparison: mean KL %g, mean ln PPL ratio %g; want both within %g of 0",
			self.KLD.Value, self.LnPPLRatio.Value, floor)
	}
	// Only near-ties of the top two logits (within one code) can disagree.
	if self.SameTop.Value < 0.99 {
		t.Errorf("self comparison: same top %.4f", self.SameTop.Value)
	}
	lcppCheckPrinted(t, printed.String())
	var fromJSON lcpp.Report
	if err := json.Unmarshal(lcppRead(t, jsonPath), &fromJSON); err != nil || fromJSON.N != self.N || fromJSON.KLD != self.KLD {
		t.Errorf("JSON report: %v, N %d", err, fromJSON.N)
	}

	t.Run("quantized candidate", func(t *testing.T) {
		q := filepath.Join(dir, "lut4")
		err := Quantize(ctx, QuantizeConfig{Model: tiny, Out: q, Format: "LUT4 per-tensor + pcs", Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := EvalLCPP(ctx, LCPPEvalConfig{Trace: base, Model: q, Ctx: lcppCtx})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("LUT4 RTN: mean KL %.4g ± %.2g, median %.4g, PPL %.4f vs %.4f, same top %.4f, RMS Δp %.4f",
			rep.KLD.Value, rep.KLD.Unc, rep.KLDPercentiles[5].Value, rep.PPL.Value, rep.PPLBase.Value,
			rep.SameTop.Value, rep.RMSDeltaP.Value)
		// A 4-bit RTN copy of a small model diverges by far more than the
		// floor: at least 1e-3 nats and at least 10 standard errors.
		if rep.KLD.Value < 1e-3 || rep.KLD.Value < 10*rep.KLD.Unc || rep.KLD.Value < 10*math.Abs(self.KLD.Value) {
			t.Errorf("LUT4 mean KL %g ± %g vs the self floor %g", rep.KLD.Value, rep.KLD.Unc, self.KLD.Value)
		}
		if rep.PPLBase != self.PPLBase {
			t.Errorf("PPL(base) %v differs from the self run's %v: the base is the same", rep.PPLBase, self.PPLBase)
		}
	})

	t.Run("llama.cpp layout", func(t *testing.T) {
		bin := filepath.Join(dir, "base.kld")
		if err := TraceLCPP(ctx, LCPPTraceConfig{Model: tiny, Data: text, Out: bin, Ctx: lcppCtx, LlamaCpp: true}); err != nil {
			t.Fatal(err)
		}
		rep, err := EvalLCPP(ctx, LCPPEvalConfig{Trace: bin, Model: tiny})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.KLDs, self.KLDs) || !slices.Equal(rep.DeltaPs, self.DeltaPs) || rep.PPL != self.PPL {
			t.Errorf("the llama.cpp layout scored differently: mean KL %g vs %g", rep.KLD.Value, self.KLD.Value)
		}
	})
}

// lcppCheckPrinted checks that the report holds llama.cpp's lines in order.
func lcppCheckPrinted(t *testing.T, s string) {
	t.Helper()
	rest := s
	for _, line := range []string{
		"chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n   1 ",
		"\n====== Perplexity statistics ======\nMean PPL(Q)                   : ",
		"\nMean PPL(base)                : ", "\nCor(ln(PPL(Q)), ln(PPL(base))): ", "\nMean ln(PPL(Q)/PPL(base))     : ",
		"\nMean PPL(Q)/PPL(base)         : ", "\nMean PPL(Q)-PPL(base)         : ",
		"\n\n====== KL divergence statistics ======\nMean    KLD: ", "\nMaximum KLD: ", "\n99.9%   KLD: ",
		"\nMedian  KLD: ", "\n 0.1%   KLD: ", "\nMinimum KLD: ",
		"\n\n====== Token probability statistics ======\nMean    Δp: ", "\nMaximum Δp: ", "\n75.0%   Δp: ",
		"\nMedian  Δp: ", "\n25.0%   Δp: ", "\nMinimum Δp: ", "\nRMS Δp    : ", "\nSame top p: ",
	} {
		i := strings.Index(rest, line)
		if i < 0 {
			t.Errorf("printed report lacks %q after the previous line:\n%s", line, s)
			return
		}
		rest = rest[i+len(line):]
	}
}

func lcppRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLCPPRefusals: too little text, and bases that do not fit the
// candidate (vocabulary, n_ctx, BOS rule) or are truncated. None of these
// runs the model.
func TestLCPPRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tiny := filepath.Join("models", "forge-tiny")

	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("func main() { println(\"hello\") }\n"), 0o644)
	err := TraceLCPP(ctx, LCPPTraceConfig{Model: tiny, Data: short, Out: filepath.Join(dir, "x"), Ctx: lcppCtx})
	if !errors.Is(err, lcpp.ErrShort) || !strings.Contains(err.Error(), short) {
		t.Errorf("short text: %v", err)
	}

	// Small synthetic bases: n_ctx 8, 2 windows, zero codes.
	mk := func(name string, vocab, bos int, f lcpp.Format) string {
		h := lcpp.Header{NCtx: 8, NVocab: vocab, NChunk: 2, Tokens: make([]int, 16), BOS: bos}
		path := filepath.Join(dir, name)
		w, err := lcpp.Create(path, h, f)
		if err != nil {
			t.Fatal(err)
		}
		var win lcpp.BaseWindow
		win.Resize(h.Scored(), vocab)
		for range 2 {
			if err := w.WriteWindow(&win); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const vocab = 4160 // forge-tiny's
	good := mk("good.safetensors", vocab, -1, lcpp.Forge)
	truncated := filepath.Join(dir, "truncated.safetensors")
	data := lcppRead(t, good)
	os.WriteFile(truncated, data[:len(data)-100], 0o644)
	goodBin := mk("good.kld", vocab, -1, lcpp.LlamaCpp)
	truncatedBin := filepath.Join(dir, "truncated.kld")
	data = lcppRead(t, goodBin)
	os.WriteFile(truncatedBin, data[:len(data)-100], 0o644)

	for _, c := range []struct {
		name  string
		cfg   LCPPEvalConfig
		kind  error
		words string
	}{
		{"vocabulary", LCPPEvalConfig{Trace: mk("v512", 512, -1, lcpp.Forge), Model: tiny}, lcpp.ErrMismatch, "n_vocab 512"},
		{"vocabulary, llama.cpp layout", LCPPEvalConfig{Trace: mk("v512.kld", 512, -1, lcpp.LlamaCpp), Model: tiny},
			lcpp.ErrMismatch, "inconsistent vocabulary"},
		{"n_ctx", LCPPEvalConfig{Trace: good, Model: tiny, Ctx: 512}, lcpp.ErrMismatch, "n_ctx 8"},
		{"BOS rule", LCPPEvalConfig{Trace: mk("bos", vocab, 5, lcpp.Forge), Model: tiny}, lcpp.ErrMismatch, "BOS 5"},
		{"truncated", LCPPEvalConfig{Trace: truncated, Model: tiny}, lcpp.ErrBase, truncated},
		{"truncated, llama.cpp layout", LCPPEvalConfig{Trace: truncatedBin, Model: tiny}, lcpp.ErrBase, "truncated"},
	} {
		if _, err := EvalLCPP(ctx, c.cfg); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v; want %v mentioning %q", c.name, err, c.kind, c.words)
		}
	}
}
