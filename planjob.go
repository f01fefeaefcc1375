package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/plan"
	"forge/plan/chart"
)

// PlanConfig configures PlanBudget. Sweep, Out and Budget are required;
// the rest defaults.
type PlanConfig struct {
	Sweep string // a whole measurement file (forge sweep; shards merged)
	Out   string // the plan file to write (for forge quantize's plan)
	JSON  string // optional: the solution as a JSON report
	// Budget is "2.6bpw" (bits per weight of the swept matrices) or the
	// whole bundle's size ("3.1GiB", "850MiB", "2.5GB", "123456B");
	// plan.ParseBudget.
	Budget     string
	Objective  string // "mean" (the default) or "p99" (plan.SolveOptions)
	Resolution int64  // bytes per cell of the planner's table; 0: automatic
	// Plots is an optional directory (created if missing) for the
	// figures PlanPlotFiles names: the sweep's sensitivity by layer and
	// the predicted Pareto front with the uniform plans and this plan
	// (package plan/chart).
	Plots     string
	Overwrite bool // replace a plan, report or plots forge wrote earlier
}

// PlanPlotFiles lists the figures PlanBudget writes into dir:
// sensitivity.png/.svg (chart.Sensitivity) and pareto.png/.svg
// (chart.Pareto).
func PlanPlotFiles(dir string) []string {
	var fs []string
	for _, name := range []string{"sensitivity", "pareto"} {
		fs = append(fs, filepath.Join(dir, name+".png"), filepath.Join(dir, name+".svg"))
	}
	return fs
}

// PlanBudget chooses a mixed-precision plan from a sweep under a size
// budget (plan.Solve: the least summed ΔKL, or 99th percentile, whose
// bytes fit) and writes it as a plan file that forge quantize reads,
// recording the prediction and the sweep; with cfg.JSON also the whole
// solution (per-unit choices, the bound on the optimum, the uniform
// plans); with cfg.Plots the figures of PlanPlotFiles. Outputs are
// written through a synced temporary file; an existing one is replaced
// only with Overwrite and only when forge wrote it.
func PlanBudget(ctx context.Context, cfg PlanConfig) (*plan.Solution, error) {
	if cfg.Sweep == "" || cfg.Out == "" {
		return nil, errors.New("plan: a sweep file and an output path are required")
	}
	b, err := plan.ParseBudget(cfg.Budget)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	targets, err := planTargets(cfg)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Sweep}, targets...); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	s, err := plan.ReadSweep(cfg.Sweep)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sol, err := plan.Solve(s, plan.SolveOptions{Budget: b, Objective: cfg.Objective, Resolution: cfg.Resolution, Path: cfg.Sweep})
	if err != nil {
		return nil, fmt.Errorf("plan: sweep %s: %w", cfg.Sweep, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, err := sol.Plan().Marshal()
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if err := durable.WriteFile(cfg.Out, raw); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if cfg.JSON != "" {
		rep, err := versionedJSON(sol)
		if err != nil {
			return nil, fmt.Errorf("plan: report: %w", err)
		}
		if err := durable.WriteFile(cfg.JSON, rep); err != nil {
			return nil, fmt.Errorf("plan: report: %w", err)
		}
	}
	if cfg.Plots != "" {
		if err := writePlanPlots(ctx, cfg.Plots, s, sol); err != nil {
			return nil, fmt.Errorf("plan: plots: %w", err)
		}
	}
	return sol, nil
}

// planTargets lists PlanBudget's outputs, creating the plots directory
// (as forge eval compare does its output directory) so that the plots in
// it can be checked.
func planTargets(cfg PlanConfig) ([]outpath.Target, error) {
	targets := []outpath.Target{{Path: cfg.Out, Owned: ownedPlan}, {Path: cfg.JSON, Owned: outpath.ForgeJSON}}
	if cfg.Plots == "" {
		return targets, nil
	}
	for _, f := range []string{cfg.Sweep, cfg.Out, cfg.JSON} {
		if f != "" && filepath.Clean(f) == filepath.Clean(cfg.Plots) {
			return nil, fmt.Errorf("%w: the plots directory %s is also a file of the job", outpath.ErrOverlap, cfg.Plots)
		}
	}
	if err := os.MkdirAll(cfg.Plots, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	for _, f := range PlanPlotFiles(cfg.Plots) {
		owned := outpath.SVG
		if filepath.Ext(f) == ".png" {
			owned = outpath.PNG
		}
		targets = append(targets, outpath.Target{Path: f, Owned: owned})
	}
	return targets, nil
}

// writePlanPlots draws the figures of PlanPlotFiles into dir.
func writePlanPlots(ctx context.Context, dir string, s *plan.Sweep, sol *plan.Solution) error {
	if _, err := chart.Sensitivity(filepath.Join(dir, "sensitivity"), s); err != nil {
		return err
	}
	_, err := chart.Pareto(ctx, filepath.Join(dir, "pareto"), s, sol, chart.ParetoOptions{})
	return err
}

// ownedPlan recognises a plan file forge plan wrote: a plan that records
// the sweep it was chosen from. A hand-written plan is never replaced.
func ownedPlan(path string) bool {
	p, err := plan.Read(path)
	return err == nil && p.Sweep != nil
}
