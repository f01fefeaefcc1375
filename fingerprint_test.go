package forge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"forge"
	"forge/eval/lcpp"
	"forge/source"
)

// TestFingerprintOneDefinition: a model's trace and its llama.cpp-mode base
// record the same identity, source.Fingerprint's: for a checkpoint and for
// a bundle, the kind beside the bare digest (model_kind and fingerprint in
// the trace, model_kind and model_fingerprint in the base, no "bundle:"
// prefix).
func TestFingerprintOneDefinition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := filepath.Join(dir, "lut4")
	if err := forge.Quantize(ctx, forge.QuantizeConfig{Model: evalTiny, Out: b, Format: "LUT4 per-tensor + pcs"}); err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(evalData)
	if err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "head.txt") // ≈ 150 tokens: 4 windows of 32
	if err := os.WriteFile(text, code[:400], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ model, kind string }{{evalTiny, source.KindCheckpoint}, {b, source.KindBundle}} {
		src, err := source.Open(c.model)
		if err != nil {
			t.Fatal(err)
		}
		kind, fp, err := source.Fingerprint(src)
		src.Close()
		if err != nil || kind != c.kind || len(fp) != 64 {
			t.Fatalf("%s: source.Fingerprint %q %q %v", c.model, kind, fp, err)
		}
		name := filepath.Base(c.model)
		rep, err := forge.Trace(ctx, forge.TraceConfig{Model: c.model, Data: []string{evalData + ":1"},
			Out: filepath.Join(dir, name+".trace"), Seq: 16})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Meta.ModelKind != kind || rep.Meta.Fingerprint != fp {
			t.Errorf("%s: trace records %q %q, source.Fingerprint %q %q", name, rep.Meta.ModelKind, rep.Meta.Fingerprint, kind, fp)
		}
		basePath := filepath.Join(dir, name+".base")
		if err := forge.TraceLCPP(ctx, forge.LCPPTraceConfig{Model: c.model, Data: text, Out: basePath, Ctx: 32}); err != nil {
			t.Fatal(err)
		}
		base, err := lcpp.Open(basePath)
		if err != nil {
			t.Fatal(err)
		}
		if base.Meta["model_kind"] != kind || base.Meta["model_fingerprint"] != fp {
			t.Errorf("%s: base records %q %q, source.Fingerprint %q %q", name, base.Meta["model_kind"], base.Meta["model_fingerprint"], kind, fp)
		}
		base.Close()
	}
}
