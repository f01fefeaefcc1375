package forge_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/bundle"
)

// TestQuantizeInspectLogits: forge-tiny → LUT4 bundle → inspect → logits,
// as a user runs it; the same seed gives byte-identical bundles.
func TestQuantizeInspectLogits(t *testing.T) {
	dir := t.TempDir()
	var outs []string
	for i := range 2 {
		out := filepath.Join(dir, "b"+string(rune('0'+i)))
		err := forge.Quantize(context.Background(), forge.QuantizeConfig{
			Model: filepath.Join("models", "forge-tiny"), Out: out, Format: "LUT4 per-tensor + pcs", Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	m0, _ := os.ReadFile(filepath.Join(outs[0], bundle.ManifestName))
	m1, _ := os.ReadFile(filepath.Join(outs[1], bundle.ManifestName))
	if strings.Replace(string(m0), outs[0], "", -1) != strings.Replace(string(m1), outs[1], "", -1) {
		t.Error("two runs with the same seed wrote different manifests (file hashes)")
	}
	in, err := forge.Inspect(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !in.Bundle || in.Params != 8_419_592 {
		t.Errorf("bundle inspection: %+v", in)
	}
	var quantized int
	for _, m := range in.Matrices {
		if m.Format == "LUT4 per-tensor + pcs" {
			quantized++
			if m.BPW < 4 || m.BPW > 4.2 {
				t.Errorf("%s: %.3f bpw for LUT4 + pcs", m.Name, m.BPW)
			}
			if !strings.HasPrefix(m.Placement, "runs on the ANE") {
				t.Errorf("%s: placement %q", m.Name, m.Placement)
			}
		}
	}
	// 6 DeltaNet layers × 3 + 2 attention × 4 + 8 × 3 MLP + head.
	if quantized != 6*3+2*4+8*3+1 {
		t.Errorf("%d quantized matrices", quantized)
	}
	tok := filepath.Join(dir, "t.json")
	os.WriteFile(tok, []byte(`[1116, 2239, 275, 1030]`), 0o644)
	rep, err := forge.Logits(context.Background(), forge.LogitsConfig{Model: outs[0], Tokens: tok, Out: filepath.Join(dir, "l.safetensors")})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Sequences[0].NextP; !(p > 0 && p <= 1) {
		t.Errorf("next-token probability %v", p)
	}
}

// TestQuantizeRefusals: an unknown format, a format that cannot hold a
// shape, an unknown method, and an existing output are refused.
func TestQuantizeRefusals(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	cases := []struct {
		cfg  forge.QuantizeConfig
		want string
	}{
		{forge.QuantizeConfig{Format: "LUT7 per-tensor + pcs"}, "LUT7"},
		{forge.QuantizeConfig{Format: "vector 3x16 + pcs"}, "vector 3x16"},
		{forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Method: "awq"}, "awq"},
		{forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Out: dir}, "already exists"},
	}
	for _, c := range cases {
		c.cfg.Model = filepath.Join("models", "forge-tiny")
		if c.cfg.Out == "" {
			c.cfg.Out = filepath.Join(dir, "x")
		}
		err := forge.Quantize(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

// TestSNRGaussian: LUT4 per-tensor + pcs on a standard normal matrix lands
// at the Lloyd–Max figure for 4 bits, 20.2 dB (docs/quantization.md §1 anchor
// LUT4 ≈ 20 dB); ±0.5 dB covers the finite sample and per-row scales.
func TestSNRGaussian(t *testing.T) {
	res, err := forge.SNR(context.Background(), forge.SNRConfig{Rows: 512, Cols: 512, Seed: 1,
		Formats: []string{"LUT4 per-tensor + pcs", "INT8 per-channel"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || math.Abs(res[0].SNRdB-20.2) > 0.5 || res[0].BPW < 4 || res[1].SNRdB < 35 {
		t.Errorf("%+v", res)
	}
}

// TestResumeDamagedWork (issue 10): a finished matrix in OUT.work whose
// bytes changed (one flipped bit) is not baked into the bundle: the resumed
// run finds it failing its SHA-256, says so, makes it again, and writes the
// bundle an uninterrupted run writes.
func TestResumeDamagedWork(t *testing.T) {
	dir := t.TempDir()
	cfg := forge.QuantizeConfig{Model: filepath.Join("models", "forge-tiny"), Format: "LUT4 per-tensor + pcs", Seed: 3}
	whole := cfg
	whole.Out = filepath.Join(dir, "whole")
	if err := forge.Quantize(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cut := cfg
	cut.Out = filepath.Join(dir, "cut")
	cut.Progress = func(done, total int64) {
		if done == 10 {
			cancel()
		}
	}
	err := forge.Quantize(ctx, cut)
	var kept *forge.WorkKeptError
	if !errors.As(err, &kept) || !errors.Is(err, context.Canceled) || kept.Dir != cut.Out+".work" || kept.Bytes <= 0 {
		t.Fatalf("interrupted run: %v", err)
	}
	victim := filepath.Join(kept.Dir, "layers.0.mlp.up_proj.weight.safetensors")
	raw, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-100] ^= 0x10 // a bit of the packed indices
	os.WriteFile(victim, raw, 0o644)
	var logs []string
	cut.Progress, cut.Resume = nil, true
	cut.Log = func(line string) { logs = append(logs, line) }
	if err := forge.Quantize(context.Background(), cut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(logs, "\n"), victim+" failed its SHA-256 check") {
		t.Errorf("the damage was not reported: %q", logs)
	}
	a, _ := os.ReadFile(filepath.Join(whole.Out, "model-00001-of-00001.safetensors"))
	b, _ := os.ReadFile(filepath.Join(cut.Out, "model-00001-of-00001.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the resumed bundle differs from an uninterrupted run's")
	}
}
