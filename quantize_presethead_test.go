package forge

import (
	"os"
	"path/filepath"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/plan"
)

// TestPresetHead: a budgeted preset gives the head its INT8 in the plan
// file the planner wrote (its matrices and prediction kept) and in the
// gate's uniform baseline, so that the two bundles the gate compares have
// the same head; without a preset the baseline leaves the head alone.
func TestPresetHead(t *testing.T) {
	cfg, err := QuantizeConfig{Preset: "2bit", Calib: []string{"data/code-train-sample.txt:2"}, Budget: "2.6bpw"}.presetBudget()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.presetHead == nil || *cfg.presetHead != lut.INT8 || cfg.Method != "gptq" || !cfg.AW || !cfg.Hadamard || cfg.SweepCandidates != PresetCandidates {
		t.Fatalf("preset budget config: head %v, method %q, aw %v, hadamard %v, candidates %q", cfg.presetHead, cfg.Method, cfg.AW, cfg.Hadamard, cfg.SweepCandidates)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	p := &plan.Plan{Matrices: map[string]plan.Spec{"0.gate": {Format: lut.Vec2x16}}, Prediction: &plan.Prediction{BPW: 2.6, KL: 0.01}}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTestFile(path, raw); err != nil {
		t.Fatal(err)
	}
	if err := setPlanHead(path, lut.INT8); err != nil {
		t.Fatal(err)
	}
	back, err := plan.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Parts[model.PartHead].Format != lut.INT8 || back.Matrices["0.gate"].Format != lut.Vec2x16 || back.Prediction == nil || back.Prediction.BPW != 2.6 {
		t.Errorf("plan after setPlanHead: parts %v, matrices %v, prediction %+v", back.Parts, back.Matrices, back.Prediction)
	}
	s := &plan.Sweep{Units: []plan.Unit{{Matrices: []string{"0.gate", "0.up"}}}}
	c, err := plan.ParseCandidate("LUT4 + pcs")
	if err != nil {
		t.Fatal(err)
	}
	for _, head := range []*lut.Format{nil, cfg.presetHead} {
		raw, err := uniformPlan(s, c, head)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeTestFile(path, raw); err != nil {
			t.Fatal(err)
		}
		u, err := plan.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := u.Parts[model.PartHead]
		if (head == nil) == ok || ok && got.Format != *head || u.Matrices["0.up"].Format != lut.LUT4 {
			t.Errorf("uniform plan with head %v: parts %v, matrices %v", head, u.Parts, u.Matrices)
		}
	}
}

func writeTestFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
