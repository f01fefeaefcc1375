package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"forge/bundle"
	"forge/corpus"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/source"
)

// ErrGate marks a plan whose bundle did not beat the best uniform format
// of no more bytes on the held-out trace (Gate).
var ErrGate = errors.New("the plan failed its gate")

// quantizeBudget is forge quantize --budget: measure each unit's
// sensitivity (Sweep, or a given measurement file made with the same
// recipe), choose the plan that fits the budget (PlanBudget: OUT.plan.json),
// quantize it into OUT and gate it on the held-out EvalTrace (Gate). The
// plan, its prediction and the gate's verdict are recorded in OUT's
// manifest; a bundle that fails its gate is moved to OUT.rejected and the
// error wraps ErrGate.
func quantizeBudget(ctx context.Context, cfg QuantizeConfig) error {
	switch {
	case cfg.Format != "" || cfg.Plan != "":
		return fmt.Errorf("quantize: a budget chooses the plan: give no format or plan with it")
	case cfg.EvalTrace == "":
		return fmt.Errorf("quantize: a budgeted plan is gated on a held-out trace: give the trace to evaluate on (another text than the sweep's)")
	case cfg.Sweep == "" && cfg.SweepTrace == "" && len(cfg.Calib) == 0:
		return fmt.Errorf("quantize: a budgeted plan needs a sweep: give a trace to measure it on (or calibration data to draw one from), or a measurement file")
	case cfg.LowRankRank != 0 || len(cfg.LowRankParts) > 0:
		return fmt.Errorf("quantize: with a budget the low-rank ranks are the sweep's candidates (\"FORMAT, rank N\"), not a recipe-wide rank")
	}
	if _, err := plan.ParseBudget(cfg.Budget); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := checkQuantizePaths(cfg); err != nil {
		return err
	}
	gateSum, err := fileSHA256(cfg.EvalTrace)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if cfg.SweepTrace != "" {
		if sum, err := fileSHA256(cfg.SweepTrace); err != nil || sum == gateSum {
			return fmt.Errorf("quantize: the sweep's trace and the gate's are the same file (%v): gate on held-out text", err)
		}
	}
	out := filepath.Clean(cfg.Out)
	sweepPath := cfg.Sweep
	if sweepPath == "" && cfg.SweepTrace == "" {
		cfg.SweepTrace = out + ".sweep.trace"
		if err := heldOutTrace(ctx, cfg); err != nil {
			return err
		}
		if sum, err := fileSHA256(cfg.SweepTrace); err != nil || sum == gateSum {
			return fmt.Errorf("quantize: the sweep's trace %s is the gate's (%v)", cfg.SweepTrace, err)
		}
	}
	if sweepPath == "" {
		sweepPath = out + ".sweep.json"
		_, err := Sweep(ctx, SweepConfig{Model: cfg.Model, Trace: cfg.SweepTrace, Out: sweepPath,
			Candidates: cfg.SweepCandidates, Unit: cfg.SweepUnit, Rows: cfg.SweepRows,
			Method: cfg.Method, AW: cfg.AW, Hadamard: cfg.Hadamard, LowRankWeighted: cfg.LowRankWeighted, NoRefit: cfg.NoRefit,
			Calib: cfg.Calib, Seq: cfg.Seq, HoldOut: cfg.HoldOut, Seed: cfg.Seed,
			Resume: cfg.Resume, Overwrite: cfg.Overwrite, Progress: cfg.Progress, Log: cfg.Log})
		if err != nil {
			return err
		}
	}
	s, err := plan.ReadSweep(sweepPath)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	ck, err := source.OpenCheckpoint(cfg.Model)
	if err != nil {
		return err
	}
	fp, err := ck.Fingerprint()
	ck.Close()
	if err != nil {
		return err
	}
	if fp != s.Model.Fingerprint {
		return fmt.Errorf("quantize: sweep %s measured another model (fingerprint %.12s…, %s) than %s (%.12s…)",
			sweepPath, s.Model.Fingerprint, s.Model.Path, cfg.Model, fp)
	}
	if err := sameRecipe(s, cfg); err != nil {
		return fmt.Errorf("quantize: sweep %s: %w", sweepPath, err)
	}
	if s.Trace.SHA256 == gateSum {
		return fmt.Errorf("quantize: %s is the trace sweep %s measured on: gate on held-out text", cfg.EvalTrace, sweepPath)
	}
	planPath := out + ".plan.json"
	sol, err := PlanBudget(ctx, PlanConfig{Sweep: sweepPath, Out: planPath, Budget: cfg.Budget, Objective: cfg.Objective,
		Overwrite: cfg.Overwrite || cfg.Resume})
	if err != nil {
		return err
	}
	logf(cfg.Log, "plan %s: %.4f bpw over the swept matrices, predicted KL %.5f (%s)", planPath, sol.BPW, sol.KL, sweepPath)
	if cfg.presetHead != nil {
		if err := setPlanHead(planPath, *cfg.presetHead); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		logf(cfg.Log, "plan %s: the head in %s (the preset's; outside the budget)", planPath, cfg.presetHead)
	}
	rep, err := Gate(ctx, GateConfig{Sweep: s, Solution: sol, PlanPath: planPath, Model: cfg.Model, Trace: cfg.EvalTrace, Head: cfg.presetHead,
		Out: cfg.Out, Overwrite: cfg.Overwrite, Progress: cfg.Progress, Log: cfg.Log})
	if err != nil {
		return err
	}
	if err := bundle.Annotate(cfg.Out, "gate", rep.summary()); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	logf(cfg.Log, "gate %s", rep.Verdict)
	if !rep.Passed {
		rejected := out + ".rejected"
		if err := os.Rename(out, rejected); err != nil {
			return fmt.Errorf("quantize: %w: %s (and moving it aside: %v)", ErrGate, rep.Verdict, err)
		}
		return fmt.Errorf("quantize: %w: %s; the bundle is kept as %s", ErrGate, rep.Verdict, rejected)
	}
	return nil
}

// sameRecipe refuses a measurement file made with other quantizer
// settings than cfg's: its ΔKL would not predict this bundle. The
// calibration rows are compared by their fingerprint (corpus.Recipe).
func sameRecipe(s *plan.Sweep, cfg QuantizeConfig) error {
	q, err := recipeConfig(s.Recipe)
	if err != nil {
		return err
	}
	method := cfg.Method
	if method == "" {
		method = "rtn"
	}
	if q.Method != method || q.AW != cfg.AW || q.Hadamard != cfg.Hadamard || q.Seed != cfg.Seed || q.LowRankWeighted != cfg.LowRankWeighted ||
		q.refits() != cfg.refits() {
		return fmt.Errorf("measured with method %s, aw %v, hadamard %v, seed %d, weighted low-rank %v, refit %v; this run asks for %s, %v, %v, %d, %v, %v",
			q.Method, q.AW, q.Hadamard, q.Seed, q.LowRankWeighted, q.refits(), method, cfg.AW, cfg.Hadamard, cfg.Seed, cfg.LowRankWeighted, cfg.refits())
	}
	var rec struct {
		Calibration *struct {
			Recipe struct {
				Fingerprint string `json:"fingerprint"`
			} `json:"recipe"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal(s.Recipe, &rec); err != nil {
		return err
	}
	switch {
	case rec.Calibration == nil && len(cfg.Calib) > 0:
		return fmt.Errorf("measured without calibration data; this run gives some")
	case rec.Calibration != nil && len(cfg.Calib) == 0:
		return fmt.Errorf("measured with calibration data (%v); this run gives none", q.Calib)
	case rec.Calibration != nil:
		set, err := loadCalib(cfg)
		if err != nil {
			return err
		}
		if fp := set.Recipe().Fingerprint; fp != rec.Calibration.Recipe.Fingerprint {
			return fmt.Errorf("measured with other calibration rows (%v, fingerprint %.12s…) than this run's (%.12s…)",
				q.Calib, rec.Calibration.Recipe.Fingerprint, fp)
		}
	}
	return nil
}

func logf(log func(string), format string, args ...any) {
	if log != nil {
		log(fmt.Sprintf(format, args...))
	}
}

// heldOutTrace records the sweep's trace (cfg.SweepTrace) on rows of the
// calibration sources that are not calibration rows: the sources sampled
// again with seed + 1, less every row that shares a window of
// corpus.OverlapWindow tokens with a calibration row, then SweepRows of
// them (DefaultSweepRows) evenly spread over what is left, so that every
// source is represented.
func heldOutTrace(ctx context.Context, cfg QuantizeConfig) error {
	if err := checkOutputs(cfg.Overwrite || cfg.Resume, append([]string{cfg.Model}, dataPaths(cfg.Calib)...),
		outpath.Target{Path: cfg.SweepTrace, Owned: outpath.ForgeSafetensors}); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	calib, err := loadCalib(cfg)
	if err != nil {
		return err
	}
	seq := cfg.Seq
	if seq == 0 {
		seq = corpus.DefaultSeq
	}
	cand, err := loadRows(cfg.Model, cfg.Calib, corpus.Options{Seq: seq, Seed: cfg.Seed + 1})
	if err != nil {
		return err
	}
	bad := map[int]bool{}
	for _, o := range corpus.Overlaps(cand.Rows, calib.Rows, corpus.OverlapWindow) {
		bad[o.A] = true
	}
	var free []int
	for i := range cand.Rows {
		if !bad[i] {
			free = append(free, i)
		}
	}
	want := cfg.SweepRows
	if want == 0 {
		want = DefaultSweepRows
	}
	if len(free) < 2 {
		return fmt.Errorf("quantize: the calibration sources hold %d rows outside the calibration rows; the sweep needs at least 2: give a trace to sweep on", len(free))
	}
	var rows [][]int
	var picked []int
	for k := range min(want, len(free)) {
		i := free[k*len(free)/min(want, len(free))]
		rows, picked = append(rows, cand.Rows[i]), append(picked, i)
	}
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return err
	}
	defer src.Close()
	recipe := map[string]any{"held_out_from": cand.Recipe(), "rows": picked,
		"excluding": fmt.Sprintf("rows sharing a %d-token window with the calibration rows (fingerprint %s)", corpus.OverlapWindow, calib.Recipe().Fingerprint)}
	_, err = recordTrace(ctx, TraceConfig{Model: cfg.Model, Out: cfg.SweepTrace, Overwrite: cfg.Overwrite || cfg.Resume}, m, src, seq, rows, recipe)
	if err != nil {
		return err
	}
	logf(cfg.Log, "sweep trace %s: %d held-out rows of the calibration sources (%d of %d sampled rows share no window with the calibration rows)",
		cfg.SweepTrace, len(rows), len(free), len(cand.Rows))
	return nil
}

// setPlanHead gives the head format f in the plan file at path (a part
// default; the plan's matrices and prediction are kept), atomically.
func setPlanHead(path string, f lut.Format) error {
	p, err := plan.Read(path)
	if err != nil {
		return err
	}
	if p.Parts == nil {
		p.Parts = map[model.Part]plan.Spec{}
	}
	p.Parts[model.PartHead] = plan.Spec{Format: f}
	raw, err := p.Marshal()
	if err != nil {
		return err
	}
	return durable.WriteFile(path, raw)
}
