package forge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/bundle"
	"forge/plan"
)

// TestQuantizeBudget: forge quantize --budget sweeps, plans within the
// budget, quantizes and gates in one call: the bundle's matrices fit the
// budget, its manifest records the plan with its prediction and the
// gate's verdict (measured on the held-out trace, against the best
// uniform candidate of no more bytes), and the sweep and plan are kept
// for reuse. A sweep whose measurements lie (LUT4 no better than LUT2 in
// any unit) makes a plan that spends its bytes keeping one band in bf16
// and the rest in LUT2, which fails its gate against uniform LUT4 (the
// first of the uniform plans the lie ties, and it fits in the plan's
// bytes): the bundle is moved aside and the error says so.
func TestQuantizeBudget(t *testing.T) {
	tiny := filepath.Join("models", "forge-tiny")
	sweepTr := sweepTrace(t, tiny, 2)
	gateTr := filepath.Join(t.TempDir(), "gate.trace")
	if _, err := forge.Trace(context.Background(), forge.TraceConfig{Model: tiny,
		Data: []string{filepath.Join("data", "prose-heldout.txt") + ":2"}, Seq: 64, Out: gateTr}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "b")
	// A user's directory named as the gate's once was is never touched.
	mine := filepath.Join(dir, "b.gate")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := os.Stat(filepath.Join(mine, "keep.txt")); err != nil {
			t.Errorf("the gate removed a directory it did not make: %v", err)
		}
	}()
	cfg := forge.QuantizeConfig{Model: tiny, Out: out, Budget: "3.0bpw", SweepTrace: sweepTr, EvalTrace: gateTr,
		SweepCandidates: "LUT4 + pcs;LUT2 + pcs;bf16", SweepUnit: "band:2", SweepRows: 2}
	if err := forge.Quantize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	man := b.Manifest()
	b.Close()
	var unitBytes, params int64
	for _, e := range man.Matrices {
		if e.Name != "lm_head.weight" && e.Format != "bf16" && !e.Raw {
			unitBytes += e.Bytes
			params += int64(e.Shape[0]) * int64(e.Shape[1])
		}
	}
	if bpw := 8 * float64(unitBytes) / float64(params); bpw > 3.0 || bpw < 2.5 {
		t.Errorf("the bundle's swept matrices store %.3f bpw; budget 3.0", bpw)
	}
	gate, ok := man.Quant.Recipe["gate"].(map[string]any)
	if !ok || gate["passed"] != true {
		t.Fatalf("manifest gate: %v", man.Quant.Recipe["gate"])
	}
	base, _ := gate["baseline"].(map[string]any)
	if base["label"] != "LUT2 per-tensor + pcs" {
		t.Errorf("baseline %v, want uniform LUT2 (the best that fits)", base["label"])
	}
	pl, _ := man.Quant.Recipe["plan"].(map[string]any)
	inner, _ := pl["plan"].(map[string]any)
	if pred, _ := inner["prediction"].(map[string]any); pred == nil || pred["bpw"] == nil {
		t.Errorf("manifest plan without its prediction: %v", pl)
	}
	for _, p := range []string{out + ".sweep.json", out + ".plan.json"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	// A lying sweep: each unit's LUT4 ΔKL said to be its LUT2 ΔKL.
	s, err := plan.ReadSweep(out + ".sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+2 < len(s.Measurements); i += 3 {
		lut4, lut2 := &s.Measurements[i], &s.Measurements[i+1]
		if lut4.Candidate.Format != "LUT4 per-tensor + pcs" || lut2.Candidate.Format != "LUT2 per-tensor + pcs" {
			t.Fatalf("measurements out of order: %v, %v", lut4.Candidate, lut2.Candidate)
		}
		lut4.DKL = lut2.DKL
	}
	liar := filepath.Join(dir, "liar.json")
	if err := plan.WriteSweep(liar, s); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.Out, bad.Sweep, bad.SweepTrace, bad.Budget = filepath.Join(dir, "bad"), liar, "", "6bpw"
	err = forge.Quantize(context.Background(), bad)
	if !errors.Is(err, forge.ErrGate) || !strings.Contains(err.Error(), ".rejected") || !strings.Contains(err.Error(), "uniform LUT4") {
		t.Fatalf("lying sweep: %v, want a failed gate", err)
	}
	if _, err := os.Stat(bad.Out + ".rejected"); err != nil {
		t.Errorf("the rejected bundle: %v", err)
	}
	if _, err := os.Stat(bad.Out); err == nil {
		t.Error("a rejected bundle stayed at --out")
	}

	other := *s
	other.Model.Fingerprint = strings.Repeat("0", 64)
	otherPath := filepath.Join(dir, "other.json")
	if err := plan.WriteSweep(otherPath, &other); err != nil {
		t.Fatal(err)
	}

	// Bad input, refused before any work.
	for name, edit := range map[string]func(c *forge.QuantizeConfig){
		"no gate trace":       func(c *forge.QuantizeConfig) { c.EvalTrace = "" },
		"no sweep":            func(c *forge.QuantizeConfig) { c.SweepTrace = "" },
		"a format too":        func(c *forge.QuantizeConfig) { c.Format = "LUT4 + pcs" },
		"malformed budget":    func(c *forge.QuantizeConfig) { c.Budget = "3 bits" },
		"gate on the sweep's": func(c *forge.QuantizeConfig) { c.Sweep, c.SweepTrace, c.EvalTrace = out+".sweep.json", "", sweepTr },
		"other recipe":        func(c *forge.QuantizeConfig) { c.Sweep, c.SweepTrace, c.Seed = out+".sweep.json", "", 7 },
		"other model's sweep": func(c *forge.QuantizeConfig) { c.Sweep, c.SweepTrace = otherPath, "" },
	} {
		c := cfg
		c.Out = filepath.Join(dir, "x")
		edit(&c)
		if err := forge.Quantize(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := os.Stat(c.Out); err == nil {
			t.Errorf("%s: wrote a bundle", name)
		}
		if _, err := os.Stat(c.Out + ".plan.json"); err == nil {
			t.Errorf("%s: wrote a plan", name)
		}
	}
}

// TestQuantizeBudgetHeldOutTrace: without a sweep trace, forge quantize
// --budget draws one from the calibration sources' rows that share no
// window with the calibration rows, records it beside the bundle, and
// the rest runs as with a given trace.
func TestQuantizeBudgetHeldOutTrace(t *testing.T) {
	tiny := filepath.Join("models", "forge-tiny")
	gateTr := filepath.Join(t.TempDir(), "gate.trace")
	if _, err := forge.Trace(context.Background(), forge.TraceConfig{Model: tiny,
		Data: []string{filepath.Join("data", "prose-heldout.txt") + ":2"}, Seq: 64, Out: gateTr}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b")
	var logged []string
	// INT8 and bf16 candidates: no k-means to wait for (the AW switch
	// only asks for the calibration data here).
	err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: tiny, Out: out, Budget: "11bpw", EvalTrace: gateTr,
		AW: true, Calib: []string{filepath.Join("data", "code-train-sample.txt") + ":3"}, Seq: 32,
		SweepCandidates: "INT8;bf16", SweepUnit: "band:2", SweepRows: 3,
		Log: func(line string) { logged = append(logged, line) }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := plan.ReadSweep(out + ".sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Trace.Path != out+".sweep.trace" || s.Trace.Rows != 3 {
		t.Errorf("the sweep measured on %s, %d rows", s.Trace.Path, s.Trace.Rows)
	}
	if !strings.Contains(strings.Join(logged, "\n"), "held-out rows of the calibration sources") ||
		!strings.Contains(strings.Join(logged, "\n"), "gate passed: the plan's mean KL") {
		t.Errorf("log: %q", logged)
	}
}
