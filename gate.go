package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"forge/corpus"
	"forge/eval"
	"forge/eval/compare"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/source"
)

// GateConfig configures Gate.
type GateConfig struct {
	Sweep    *plan.Sweep    // the measurements the plan was chosen from
	Solution *plan.Solution // the plan (plan.Solve)
	PlanPath string         // its plan file (PlanBudget wrote it)
	Model    string         // the checkpoint: the sweep's
	// Trace is a held-out trace of Model on other text than the sweep's
	// trace: the plan is judged where it was not chosen.
	Trace string
	// Out is where the plan's bundle is written ("": in Work, removed
	// with it); Work is where Gate makes a fresh directory
	// (STEM.gate-RANDOM) for its other bundle and plan and removes it
	// ("": beside OUT, or beside the plan).
	Out, Work string
	// Head, if set, is the head's format in the uniform baseline as in the
	// plan file (which the caller wrote with it): the sweep does not
	// measure the head, so both bundles get the same one. nil: the head
	// is left as the checkpoint stores it in both.
	Head      *lut.Format
	Overwrite bool
	Progress  func(done, total int64) // the quantize runs' and evaluations' progress
	Log       func(line string)
}

// GateRun is one bundle the gate measured.
type GateRun struct {
	Label     string  `json:"label"`      // "plan", or the uniform candidate
	UnitBytes int64   `json:"unit_bytes"` // what the swept matrices store
	BPW       float64 `json:"bpw"`
	Predicted float64 `json:"predicted_kl"` // the sweep's prediction (base + Σ ΔKL)
	MeanKL    float64 `json:"mean_kl"`      // measured on the gate's trace
	SEKL      float64 `json:"se_kl"`
	P99KL     float64 `json:"p99_kl"`
	Top1      float64 `json:"top1"`
}

// GateReport is the gate's verdict.
type GateReport struct {
	Trace       string   `json:"trace"`
	TraceSHA256 string   `json:"trace_sha256"`
	Plan        GateRun  `json:"plan"`
	Baseline    *GateRun `json:"baseline,omitempty"` // nil: no uniform candidate fits in the plan's bytes
	Passed      bool     `json:"passed"`
	Verdict     string   `json:"verdict"`
}

// Gate quantizes the model with the plan and with the best uniform
// candidate that stores no more bytes (the one with the least predicted
// ΔKL among those that fit), both with the sweep's recipe (method,
// codebooks, rotation, calibration, seed: plan.Sweep.Recipe), scores both
// against a held-out trace that is not the sweep's, and passes the plan
// only if its measured mean KL is below the baseline's: interactions
// between units are measured, not assumed. It reports predicted against
// measured KL either way; a failed gate is a report with Passed false,
// not an error.
func Gate(ctx context.Context, cfg GateConfig) (*GateReport, error) {
	s, sol := cfg.Sweep, cfg.Solution
	ck, err := source.OpenCheckpoint(cfg.Model)
	if err != nil {
		return nil, err
	}
	fp, err := ck.Fingerprint()
	ck.Close()
	if err != nil {
		return nil, err
	}
	if fp != s.Model.Fingerprint || sol.Sweep.ModelFingerprint != fp {
		return nil, fmt.Errorf("gate: %s (fingerprint %.12s…) is not the model the sweep measured (%.12s…)", cfg.Model, fp, s.Model.Fingerprint)
	}
	sum, err := fileSHA256(cfg.Trace)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if sum == s.Trace.SHA256 {
		return nil, fmt.Errorf("gate: %s is the sweep's own trace: judge the plan on held-out text (another trace)", cfg.Trace)
	}
	tr, err := eval.OpenTrace(cfg.Trace)
	if err != nil {
		return nil, err
	}
	traceFP := tr.Meta.Fingerprint
	tr.Close()
	if traceFP != fp {
		return nil, fmt.Errorf("gate: the trace %s was recorded from another model (%.12s…) than %s", cfg.Trace, traceFP, cfg.Model)
	}
	qc, err := recipeConfig(s.Recipe)
	if err != nil {
		return nil, fmt.Errorf("gate: the sweep's recipe: %w", err)
	}
	// A fresh directory of the gate's own, so that nothing already there
	// (a user's directory of the same name) is ever removed.
	parent, stem := cfg.Work, filepath.Base(cfg.PlanPath)
	if cfg.Out != "" {
		stem = filepath.Base(cfg.Out)
	}
	if parent == "" {
		parent = filepath.Dir(cfg.PlanPath)
		if cfg.Out != "" {
			parent = filepath.Dir(filepath.Clean(cfg.Out))
		}
	}
	work, err := os.MkdirTemp(parent, stem+".gate-")
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	defer os.RemoveAll(work)
	rep := &GateReport{Trace: cfg.Trace, TraceSHA256: sum}
	planOut := cfg.Out
	if planOut == "" {
		planOut = filepath.Join(work, "plan")
	}
	run := func(label, planPath, out string, unitBytes int64, predicted float64, overwrite bool) (*GateRun, error) {
		q := qc
		q.Model, q.Out, q.Plan, q.Overwrite, q.Log = cfg.Model, out, planPath, overwrite, cfg.Log
		q.EvalTrace = cfg.Trace // calibration rows that overlap it are refused
		q.Progress = cfg.Progress
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf("gate: quantizing %s into %s", label, out))
		}
		if err := Quantize(ctx, q); err != nil {
			return nil, err
		}
		r, err := Evaluate(ctx, EvalConfig{Trace: cfg.Trace, Model: out, Progress: cfg.Progress})
		if err != nil {
			return nil, err
		}
		return &GateRun{Label: label, UnitBytes: unitBytes, BPW: 8 * float64(unitBytes) / float64(sol.Params),
			Predicted: predicted, MeanKL: r.MeanKL, SEKL: r.SEKL, P99KL: r.P99KL, Top1: r.Top1}, nil
	}
	pr, err := run("plan", cfg.PlanPath, planOut, sol.UnitBytes, sol.KL, cfg.Overwrite)
	if err != nil {
		return nil, err
	}
	rep.Plan = *pr
	var best *plan.Uniform
	for i, u := range sol.Uniform {
		if u.UnitBytes <= sol.UnitBytes && (best == nil || u.DKL < best.DKL) {
			best = &sol.Uniform[i]
		}
	}
	if best == nil {
		rep.Passed = true
		rep.Verdict = "no uniform candidate fits in the plan's bytes: nothing to beat"
		return rep, nil
	}
	if !slices.ContainsFunc(sol.Units, func(c plan.Choice) bool { return c.Candidate != best.Candidate }) {
		rep.Passed = true
		rep.Verdict = fmt.Sprintf("passed: the plan is uniform %s, the best uniform candidate that fits: nothing to beat", best.Candidate)
		return rep, nil
	}
	up, err := uniformPlan(s, best.Candidate, cfg.Head)
	if err != nil {
		return nil, err
	}
	upPath := filepath.Join(work, "uniform.json")
	if err := durable.WriteFile(upPath, up); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	br, err := run(best.Candidate.String(), upPath, filepath.Join(work, "uniform"), best.UnitBytes, s.Base.KL+best.DKL, false)
	if err != nil {
		return nil, err
	}
	rep.Baseline = br
	rep.Passed = pr.MeanKL < br.MeanKL
	verdict := "passed"
	if !rep.Passed {
		verdict = "FAILED"
	}
	rep.Verdict = fmt.Sprintf("%s: the plan's mean KL %.5f ± %.5f (predicted %.5f) against uniform %s's %.5f ± %.5f (predicted %.5f) at %.3f vs %.3f bpw",
		verdict, pr.MeanKL, pr.SEKL, pr.Predicted, br.Label, br.MeanKL, br.SEKL, br.Predicted, pr.BPW, br.BPW)
	return rep, nil
}

// uniformPlan is the plan file that gives every matrix of the sweep's
// units candidate c (and leaves the rest as the plan does: unassigned, or
// the head in head's format when it is set).
func uniformPlan(s *plan.Sweep, c plan.Candidate, head *lut.Format) ([]byte, error) {
	sp, err := c.Spec()
	if err != nil {
		return nil, err
	}
	p := &plan.Plan{Matrices: map[string]plan.Spec{}}
	if head != nil {
		p.Parts = map[model.Part]plan.Spec{model.PartHead: {Format: *head}}
	}
	for _, u := range s.Units {
		for _, k := range u.Matrices {
			p.Matrices[k] = sp
		}
	}
	return p.Marshal()
}

// recipeConfig turns a sweep's recipe record (plan.Recipe.Record, as
// Sweep writes it) back into the quantizer's settings, so that the gate
// and forge quantize --budget quantize as the sweep did: method,
// activation-weighted codebooks, rotation, seed, the weighted low-rank
// fit, and the calibration sources, rows and options.
func recipeConfig(raw []byte) (QuantizeConfig, error) {
	var rec struct {
		Method   string `json:"method"`
		AW       bool   `json:"aw"`
		Hadamard bool   `json:"hadamard"`
		Seed     uint64 `json:"seed"`
		Refit    bool   `json:"refit"`
		LowRank  *struct {
			Weighted bool `json:"weighted"`
		} `json:"lowrank"`
		Calibration *struct {
			Recipe  corpus.Recipe `json:"recipe"`
			HeldOut int           `json:"held_out_rows"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return QuantizeConfig{}, err
	}
	q := QuantizeConfig{Method: rec.Method, AW: rec.AW, Hadamard: rec.Hadamard, Seed: rec.Seed, NoRefit: !rec.Refit}
	if rec.LowRank != nil {
		q.LowRankWeighted = rec.LowRank.Weighted
	}
	if c := rec.Calibration; c != nil {
		for _, sp := range c.Recipe.Specs() {
			s := sp.Path
			if sp.Rows > 0 {
				s += ":" + strconv.Itoa(sp.Rows)
			}
			q.Calib = append(q.Calib, s)
		}
		q.Seq, q.HoldOut = c.Recipe.Options.Seq, c.HeldOut
		if c.Recipe.Options.Seed != rec.Seed {
			return QuantizeConfig{}, fmt.Errorf("calibration seed %d differs from the recipe's %d", c.Recipe.Options.Seed, rec.Seed)
		}
	}
	return q, nil
}

// summary is the gate's account for a bundle's manifest (bundle.Annotate).
func (r *GateReport) summary() map[string]any {
	m := map[string]any{"trace": r.Trace, "trace_sha256": r.TraceSHA256, "passed": r.Passed, "plan": r.Plan, "verdict": r.Verdict}
	if r.Baseline != nil {
		m["baseline"] = r.Baseline
	}
	return m
}

// PlotGate draws the gate's predicted against measured KL (the plan and
// its baseline, compare.PredictionFigure) as stem.png and stem.svg,
// replacing earlier ones only with overwrite and only if forge drew them.
func PlotGate(stem string, r *GateReport, overwrite bool) ([]string, error) {
	if err := checkOutputs(overwrite, nil, outpath.Target{Path: stem + ".png", Owned: outpath.PNG},
		outpath.Target{Path: stem + ".svg", Owned: outpath.SVG}); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	f := compare.PredictionFigure{Title: "The gate: KL predicted by the sweep, measured on " + filepath.Base(r.Trace)}
	for _, g := range []*GateRun{&r.Plan, r.Baseline} {
		if g != nil {
			f.Pairs = append(f.Pairs, compare.Pair{Label: fmt.Sprintf("%s (%.3f bpw)", g.Label, g.BPW),
				Predicted: g.Predicted, Measured: g.MeanKL, SE: g.SEKL})
		}
	}
	return f.Write(stem)
}
