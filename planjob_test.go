package forge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/checkpoint"
	"forge/internal/outpath"
	"forge/plan"
)

// tinySweep writes a whole sweep of forge-tiny's layers (unit kind
// "layer", no head) in LUT2 and LUT4 with made-up ΔKL, recorded as
// measured on the model with fingerprint fp.
func tinySweep(t *testing.T, path, fp string) *plan.Sweep {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(tinyDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := checkpoint.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	us, err := plan.Units(&cfg, "layer", false)
	if err != nil {
		t.Fatal(err)
	}
	cands := []plan.Candidate{{Format: "LUT2 per-tensor + pcs"}, {Format: "LUT4 per-tensor + pcs"}}
	s := &plan.Sweep{Version: plan.SweepVersion, Model: plan.SweepSource{Path: tinyDir, Fingerprint: fp},
		Trace:    plan.SweepTrace{Path: "ref.trace", SHA256: strings.Repeat("cd", 32), Rows: 2, Positions: 500},
		UnitKind: "layer", Candidates: cands, Units: us, FixedBytes: 3 << 20, Base: plan.SweepBase{KL: 0.002, Top1: 1}}
	for i, u := range us {
		for j, c := range cands {
			b, err := u.Bytes(c)
			if err != nil {
				t.Fatal(err)
			}
			s.Measurements = append(s.Measurements, plan.Measurement{Unit: u.Key, Candidate: c, Bytes: b,
				DKL: []float64{0.05, 0.005}[j] * float64(1+i%3), SE: 0.001, P99: 0.5})
		}
	}
	if err := plan.WriteSweep(path, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanBudgetQuantize: PlanBudget writes a plan and a report within
// the budget; forge's quantize refuses that plan for a model other than
// the sweep's, naming both fingerprints, before any work; an existing
// plan is kept without Overwrite.
func TestPlanBudgetQuantize(t *testing.T) {
	dir := t.TempDir()
	other := strings.Repeat("1", 64)
	sweep := filepath.Join(dir, "sweep.json")
	tinySweep(t, sweep, other)
	cfg := forge.PlanConfig{Sweep: sweep, Out: filepath.Join(dir, "plan.json"), JSON: filepath.Join(dir, "report.json"), Budget: "3bpw"}
	sol, err := forge.PlanBudget(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sol.BPW > 3 || sol.BPW < 2 || len(sol.Units) != 8 || sol.Sweep.ModelFingerprint != other {
		t.Errorf("solution %+v", sol.Prediction)
	}
	p, err := plan.Read(cfg.Out)
	if err != nil || p.Sweep == nil || p.Sweep.ModelFingerprint != other || len(p.Matrices) != 6*3+2*4+8*3 {
		t.Fatalf("plan %+v: %v", p, err)
	}
	if !outpath.ForgeJSON(cfg.JSON) {
		t.Error("the report is not marked as forge's")
	}

	ck, err := checkpoint.Open(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := ck.Fingerprint()
	ck.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bundle")
	err = forge.Quantize(context.Background(), forge.QuantizeConfig{Model: tinyDir, Out: out, Plan: cfg.Out, Format: "LUT4 per-tensor + pcs"})
	if err == nil || !errors.Is(err, plan.ErrPlan) || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), fp) {
		t.Errorf("quantize with another model's plan: %v", err)
	}
	for _, p := range []string{out, out + ".work", out + ".partial"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("quantize left %s", p)
		}
	}

	before, _ := os.ReadFile(cfg.Out)
	cfg.Budget = "2.5bpw"
	if _, err := forge.PlanBudget(context.Background(), cfg); !errors.Is(err, outpath.ErrExists) {
		t.Errorf("second run without Overwrite: %v", err)
	}
	if after, _ := os.ReadFile(cfg.Out); string(after) != string(before) {
		t.Error("the plan was changed")
	}
	cfg.Overwrite = true
	if sol, err := forge.PlanBudget(context.Background(), cfg); err != nil || sol.BPW > 2.5 {
		t.Errorf("with Overwrite: %v", err)
	}
	cfg.Budget = "2.5"
	if _, err := forge.PlanBudget(context.Background(), cfg); !errors.Is(err, plan.ErrBudget) {
		t.Errorf("a budget without a unit: %v", err)
	}
}
