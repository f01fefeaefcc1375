package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"forge"
	"forge/internal/progress"
	"forge/internal/table"
	"forge/internal/units"
	"forge/plan"
)

// PlanCmd is `forge plan`.
type PlanCmd struct {
	Sweep      string `required:"" type:"existingfile" placeholder:"SWEEP.json" help:"Measurement file written by forge sweep (whole: shards merged)."`
	Budget     string `required:"" help:"Size budget: bits per weight of the swept matrices (2.6bpw) or the whole bundle's size (3.1GiB, 850MiB, 2.5GB, 900MB, 123456B)."`
	Objective  string `default:"mean" enum:"mean,p99" help:"What the plan minimizes, summed over the units: mean (the mean KL increase) or p99 (its 99th percentile)."`
	Resolution int64  `placeholder:"BYTES" help:"Bytes per cell of the planner's table (default: the smallest that keeps it at most 65536 cells wide); the summary says what it can have cost."`
	Out        string `required:"" placeholder:"PLAN.json" help:"Plan file to write (forge quantize --plan)."`
	JSON       string `name:"json" placeholder:"REPORT.json" help:"Also write the solution as JSON: per-unit choices, prediction, bound, uniform plans."`
	Plots      string `placeholder:"DIR" help:"Also draw into DIR (created if missing), as PNG and SVG: sensitivity (each unit's ΔKL by layer, per part and candidate) and pareto (the predicted front of least ΔKL against bits per weight, with the uniform plans and this plan marked)."`
	Gate       bool   `help:"Then gate the plan: quantize it and the best uniform candidate of no more bytes with the sweep's recipe, score both on --eval-trace, and fail unless the plan's KL is lower."`
	Model      string `type:"existingdir" help:"With --gate: the checkpoint the sweep measured."`
	EvalTrace  string `name:"eval-trace" type:"existingfile" placeholder:"TRACE" help:"With --gate: a held-out trace of the model (not the sweep's)."`
	Bundle     string `placeholder:"DIR" help:"With --gate: keep the plan's bundle here (default: made and removed)."`
	Overwrite  bool   `help:"Replace a plan, report, plots or bundle that forge wrote earlier."`
}

func (c *PlanCmd) Run(ctx context.Context) error {
	if c.Resolution < 0 {
		return fmt.Errorf("--resolution %d: want a positive number of bytes, or 0 for automatic", c.Resolution)
	}
	if c.Gate != (c.Model != "" && c.EvalTrace != "") || (!c.Gate && c.Bundle != "") {
		return fmt.Errorf("--gate needs --model and --eval-trace, and they (and --bundle) go with --gate")
	}
	sol, err := forge.PlanBudget(ctx, forge.PlanConfig{Sweep: c.Sweep, Out: c.Out, JSON: c.JSON, Budget: c.Budget,
		Objective: c.Objective, Resolution: c.Resolution, Plots: c.Plots, Overwrite: c.Overwrite})
	if err != nil {
		return err
	}
	if err := writeSolution(os.Stdout, sol); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", c.Out)
	if c.JSON != "" {
		fmt.Printf("wrote %s\n", c.JSON)
	}
	if c.Plots != "" {
		for _, f := range forge.PlanPlotFiles(c.Plots) {
			fmt.Printf("wrote %s\n", f)
		}
	}
	if c.Gate {
		return c.gate(ctx, sol)
	}
	return nil
}

// gate runs forge.Gate on the plan just written and prints its verdict
// (and, with --plots, draws predicted against measured KL); a failed gate
// moves the plan aside to PLAN.rejected and is an error.
func (c *PlanCmd) gate(ctx context.Context, sol *plan.Solution) error {
	s, err := plan.ReadSweep(c.Sweep)
	if err != nil {
		return err
	}
	rep, err := forge.Gate(ctx, forge.GateConfig{Sweep: s, Solution: sol, PlanPath: c.Out, Model: c.Model,
		Trace: c.EvalTrace, Out: c.Bundle, Overwrite: c.Overwrite,
		Progress: progress.New("gate", false).Set,
		Log:      func(line string) { fmt.Fprintln(os.Stderr, line) }})
	if err != nil {
		return err
	}
	t := table.New("gate", "bpw", "predicted KL", "measured KL", "± se", "p99", "top-1").AlignRight(1, 2, 3, 4, 5, 6)
	for _, g := range []*forge.GateRun{&rep.Plan, rep.Baseline} {
		if g != nil {
			t.Row(g.Label, fmt.Sprintf("%.3f", g.BPW), fmt.Sprintf("%.5f", g.Predicted), fmt.Sprintf("%.5f", g.MeanKL),
				fmt.Sprintf("%.5f", g.SEKL), fmt.Sprintf("%.4f", g.P99KL), fmt.Sprintf("%.2f%%", 100*g.Top1))
		}
	}
	if err := t.Write(os.Stdout); err != nil {
		return err
	}
	if c.Plots != "" {
		files, err := forge.PlotGate(filepath.Join(c.Plots, "gate"), rep, c.Overwrite)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Printf("wrote %s\n", f)
		}
	}
	fmt.Println("gate " + rep.Verdict)
	if !rep.Passed {
		if err := os.Rename(c.Out, c.Out+".rejected"); err != nil {
			return fmt.Errorf("%w: %s (moving the plan aside: %v)", forge.ErrGate, rep.Verdict, err)
		}
		return fmt.Errorf("%w: %s; the plan is kept as %s", forge.ErrGate, rep.Verdict, c.Out+".rejected")
	}
	if c.Bundle != "" {
		fmt.Printf("wrote %s\n", c.Bundle)
	}
	return nil
}

// writeSolution prints the chosen candidate per unit, the summary and the
// uniform plans beside it.
func writeSolution(w io.Writer, sol *plan.Solution) error {
	t := table.New("unit", "candidate", "bytes", "ΔKL", "± se", "p99").AlignRight(2, 3, 4, 5)
	for _, u := range sol.Units {
		t.Row(u.Unit, u.Candidate.String(), u.Bytes, fmt.Sprintf("%.5f", u.DKL), fmt.Sprintf("%.5f", u.SE), fmt.Sprintf("%.4f", u.P99))
	}
	if err := t.Write(w); err != nil {
		return err
	}
	p := sol.Prediction
	fmt.Fprintf(w, "\npredicted KL %.5f = base %.5f + ΔKL %.5f ± %.5f (sum over the units, taken as additive: check it on the bundle)\n",
		p.KL, p.BaseKL, p.DKL, p.DKLSE)
	fmt.Fprintf(w, "size: %s of matrices (%.4f bpw over %s parameters) + %s fixed = %s; budget %s (%s of matrices)\n",
		units.BytesPrecise(p.UnitBytes), p.BPW, units.Count(p.Params), units.BytesPrecise(sol.FixedBytes),
		units.BytesPrecise(p.Bytes), sol.Sweep.Budget, units.BytesPrecise(sol.MaxUnitBytes))
	fmt.Fprintf(w, "objective %s: %.5f; no plan within the budget is below %.5f (gap %.5f at a resolution of %d B)\n",
		sol.Sweep.Objective, p.Value, p.LowerBound, p.Value-p.LowerBound, p.Resolution)
	fmt.Fprintln(w, "\nevery unit at one candidate, for comparison:")
	u := table.New("candidate", "bundle", "bpw", "ΔKL", "± se", "fits").AlignRight(1, 2, 3, 4)
	for _, x := range sol.Uniform {
		fits := "no"
		if x.Fits {
			fits = "yes"
		}
		u.Row(x.Candidate.String(), units.BytesPrecise(x.Bytes), fmt.Sprintf("%.4f", x.BPW), fmt.Sprintf("%.5f", x.DKL),
			fmt.Sprintf("%.5f", x.DKLSE), fits)
	}
	return u.Write(w)
}
