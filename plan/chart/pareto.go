package chart

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"forge/eval/compare"
	"forge/internal/units"
	"forge/plan"
)

// ErrForeign is wrapped when a solution was not chosen from the sweep it
// is drawn with.
var ErrForeign = errors.New("the solution was not chosen from this sweep")

// DefaultBudgets is the number of budgets Front solves by default.
const DefaultBudgets = 40

// autoCells is the widest planner table Front asks for (the width
// plan.Solve's automatic resolution keeps to).
const autoCells = 1 << 16

// FrontOptions configures Front; the zero value is the mean objective at
// DefaultBudgets budgets.
type FrontOptions struct {
	Objective string // "mean" or "p99", as plan.SolveOptions
	Budgets   int    // budgets solved; 0: DefaultBudgets
}

// Point is a plan on the front: what plan.Solve predicts for it and the
// most bytes its units could store (the budget it was chosen under).
type Point struct {
	Budget int64 `json:"budget_unit_bytes"`
	plan.Prediction
}

// Front is the predicted Pareto front of the sweep: the plans with the
// least objective value (summed ΔKL, or p99) for their size. With lo and
// hi the units' bytes with every unit at its smallest and at its largest
// candidate, it solves the multiple-choice knapsack (plan.Solve) under the
// budgets B_k = lo + (hi − lo)·k/n, k = 0 … n−1 (n = opt.Budgets, evenly
// spaced in bytes and so in bits per weight; B = hi has nothing to
// choose), adds the plan with every unit at its least-valued candidate
// (the front's right end, optimal under any budget from its size up),
// and keeps the points no other point beats: sorted by bytes, each has a
// smaller value than every smaller one. Every budget is solved at one
// resolution r = ⌈(hi − lo)/(2^16 − 1)⌉ bytes per cell, so a larger
// budget never scores worse; each point is within its Value − LowerBound
// of the optimum at its budget (exact at r = 1). Errors are plan.Solve's
// (a shard, an incomplete sweep: plan.ErrSweep; a sweep whose plans all
// have one size: plan.ErrBudget) and ctx's.
func Front(ctx context.Context, s *plan.Sweep, opt FrontOptions) ([]Point, error) {
	if len(s.Units) == 0 || len(s.Candidates) == 0 {
		return nil, fmt.Errorf("%w: no units or no candidates: no front", plan.ErrSweep)
	}
	n := opt.Budgets
	if n <= 0 {
		n = DefaultBudgets
	}
	lo, hi := sizeRange(s)
	res := max(1, (hi-lo+autoCells-2)/(autoCells-1))
	pts := make([]Point, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for k := range next {
				limit := lo + (hi-lo)*int64(k)/int64(n)
				b := limit + s.FixedBytes
				sol, err := plan.Solve(s, plan.SolveOptions{Objective: opt.Objective, Resolution: res,
					Budget: plan.Budget{Bytes: b, Unit: "B", Value: float64(b)}})
				if err == nil {
					pts[k] = Point{Budget: limit, Prediction: sol.Prediction}
				}
				errs[k] = err
			}
		})
	}
	for k := range n {
		if ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs { // the first: every budget fails alike on a bad sweep
		if err != nil {
			return nil, err
		}
	}
	return pareto(append(pts, best(s, opt.Objective, pts[0].Params))), nil
}

// sizeRange is the units' bytes with every unit at its smallest and at
// its largest candidate, over the measurements present.
func sizeRange(s *plan.Sweep) (lo, hi int64) {
	small, big := map[string]int64{}, map[string]int64{}
	for _, m := range s.Measurements {
		if b, ok := small[m.Unit]; !ok || m.Bytes < b {
			small[m.Unit] = m.Bytes
		}
		big[m.Unit] = max(big[m.Unit], m.Bytes)
	}
	for u, b := range small {
		lo, hi = lo+b, hi+big[u]
	}
	return lo, hi
}

// best is the plan with every unit of s at its least-valued candidate
// (the fewest bytes among equals): the front's right end. s has passed
// plan.Solve, so every unit has one measurement per candidate.
func best(s *plan.Sweep, objective string, params int64) Point {
	value := func(m plan.Measurement) float64 { return m.DKL }
	if objective == "p99" {
		value = func(m plan.Measurement) float64 { return m.P99 }
	}
	pick := map[string]plan.Measurement{}
	for _, m := range s.Measurements {
		if b, ok := pick[m.Unit]; !ok || value(m) < value(b) || (value(m) == value(b) && m.Bytes < b.Bytes) {
			pick[m.Unit] = m
		}
	}
	p := plan.Prediction{BaseKL: s.Base.KL, Params: params, Resolution: 1}
	var se2 float64
	for _, u := range s.Units {
		m := pick[u.Key]
		p.UnitBytes += m.Bytes
		p.DKL += m.DKL
		p.Value += value(m)
		se2 += m.SE * m.SE
	}
	p.DKLSE, p.KL, p.LowerBound = math.Sqrt(se2), p.BaseKL+p.DKL, p.Value
	p.Bytes, p.BPW = p.UnitBytes+s.FixedBytes, 8*float64(p.UnitBytes)/float64(params)
	return Point{Budget: p.UnitBytes, Prediction: p}
}

// pareto keeps the points no other beats: sorted by bytes (then value),
// each with a smaller value than all before it.
func pareto(pts []Point) []Point {
	slices.SortStableFunc(pts, func(a, b Point) int {
		return cmp.Or(cmp.Compare(a.UnitBytes, b.UnitBytes), cmp.Compare(a.Value, b.Value))
	})
	var out []Point
	for _, p := range pts {
		if len(out) == 0 || p.Value < out[len(out)-1].Value {
			out = append(out, p)
		}
	}
	return out
}

// ParetoOptions configures Pareto; the zero value draws no measurement
// and solves DefaultBudgets budgets.
type ParetoOptions struct {
	Budgets int // Front's budgets; 0: DefaultBudgets
	// Measured is the KL measured on the chosen plan's bundle on the
	// sweep's trace rows, drawn beside the prediction as KL − the sweep's
	// base KL; nil: none. Only a plan chosen for the mean objective
	// predicts it.
	Measured *Measured
}

// Measured is a mean KL measured on a bundle, in nats, and its standard
// error.
type Measured struct {
	KL, SE float64
}

// Pareto draws the sweep's predicted front (Front, at the solution's
// objective) against bits per weight to stem.png and stem.svg, with every
// uniform plan and the chosen plan sol marked (± its s.e. for the mean
// objective) and opt.Measured beside it, and returns the two paths. A
// solution chosen from another sweep (another model, trace, unit kind,
// set of units or measurements) is an error wrapping ErrForeign; a
// measurement with the p99 objective, or one that is not finite, is an
// error too.
func Pareto(ctx context.Context, stem string, s *plan.Sweep, sol *plan.Solution, opt ParetoOptions) ([]string, error) {
	if err := checkSolution(s, sol); err != nil {
		return nil, fmt.Errorf("chart: pareto %s: %w", stem, err)
	}
	if m := opt.Measured; m != nil && (sol.Sweep.Objective == "p99" || !isFinite(m.KL) || !isFinite(m.SE)) {
		return nil, fmt.Errorf("chart: pareto %s: a measured KL %v ± %v: want finite values and a plan chosen for the mean objective, not %s",
			stem, m.KL, m.SE, sol.Sweep.Objective)
	}
	front, err := Front(ctx, s, FrontOptions{Objective: sol.Sweep.Objective, Budgets: opt.Budgets})
	if err != nil {
		return nil, fmt.Errorf("chart: pareto %s: %w", stem, err)
	}
	return paretoFigure(s, sol, front, opt.Measured).Write(stem)
}

// paretoFigure lays out the front, the uniform plans, the chosen plan and
// the measurement.
func paretoFigure(s *plan.Sweep, sol *plan.Solution, front []Point, measured *Measured) *compare.ParetoFigure {
	mean := sol.Sweep.Objective != "p99"
	what, ylabel := "ΔKL", "predicted ΔKL, nats (log scale)"
	if !mean {
		what, ylabel = "Σ p99", "predicted Σ p99 KL of the units, nats (log scale)"
	}
	se := func(v float64) float64 {
		if mean {
			return v
		}
		return 0
	}
	fig := &compare.ParetoFigure{
		Title: fmt.Sprintf("Predicted Pareto front: %s\n%s; %s units; objective %s",
			baseName(s.Model.Path, "the model"), traceRows(s), s.UnitKind, sol.Sweep.Objective),
		XLabel:      "bits per weight of the swept matrices",
		YLabel:      ylabel,
		FrontLabel:  fmt.Sprintf("least predicted %s at each size (%d plans)", what, len(front)),
		PointsLabel: "every unit at one candidate",
	}
	for _, p := range front {
		fig.Front = append(fig.Front, compare.Mark{X: p.BPW, Y: p.Value})
	}
	for _, u := range sol.Uniform {
		fig.Points = append(fig.Points, compare.Mark{Label: u.Candidate.String(), X: u.BPW, Y: u.Value, SE: se(u.DKLSE)})
	}
	p := sol.Prediction
	label := fmt.Sprintf("chosen under %s: %.3f bpw, %s, %s %s", sol.Sweep.Budget, p.BPW, units.BytesPrecise(p.Bytes), what, fmtKL(p.Value))
	if mean {
		label += " ± " + fmtKL(p.DKLSE)
	}
	fig.Chosen = &compare.Mark{Label: label, X: p.BPW, Y: p.Value, SE: se(p.DKLSE)}
	if m := measured; m != nil {
		fig.Measured = &compare.Mark{X: p.BPW, Y: m.KL - p.BaseKL, SE: m.SE,
			Label: fmt.Sprintf("measured on the bundle: KL %s ± %s, ΔKL %s", fmtKL(m.KL), fmtKL(m.SE), fmtKL(m.KL-p.BaseKL))}
	}
	return fig
}

// checkSolution returns an error wrapping ErrForeign unless sol was
// chosen from s: the same model, trace, unit kind, fixed bytes and base,
// the same units in order, each choice one of s's measurements, and a
// uniform plan per candidate of s.
func checkSolution(s *plan.Sweep, sol *plan.Solution) error {
	if sol == nil {
		return fmt.Errorf("%w: no solution", ErrForeign)
	}
	ref := sol.Sweep
	switch {
	case ref.ModelFingerprint != s.Model.Fingerprint:
		return fmt.Errorf("%w: it was chosen for model %s, the sweep measured %s", ErrForeign, ref.ModelFingerprint, s.Model.Fingerprint)
	case ref.TraceSHA256 != s.Trace.SHA256 || ref.UnitKind != s.UnitKind || sol.FixedBytes != s.FixedBytes || sol.BaseKL != s.Base.KL:
		return fmt.Errorf("%w: its trace, unit kind, fixed bytes or base KL differ from the sweep's", ErrForeign)
	case len(sol.Units) != len(s.Units) || len(sol.Uniform) != len(s.Candidates):
		return fmt.Errorf("%w: it has %d units and %d uniform plans, the sweep %d units and %d candidates",
			ErrForeign, len(sol.Units), len(sol.Uniform), len(s.Units), len(s.Candidates))
	}
	type at struct {
		unit string
		cand plan.Candidate
	}
	ms := make(map[at]plan.Measurement, len(s.Measurements))
	for _, m := range s.Measurements {
		ms[at{m.Unit, m.Candidate}] = m
	}
	for i, c := range sol.Units {
		if c.Unit != s.Units[i].Key {
			return fmt.Errorf("%w: its unit %d is %s, the sweep's %s", ErrForeign, i, c.Unit, s.Units[i].Key)
		}
		if m, ok := ms[at{c.Unit, c.Candidate}]; !ok || m != c.Measurement {
			return fmt.Errorf("%w: unit %s in %s is not the sweep's measurement", ErrForeign, c.Unit, c.Candidate)
		}
	}
	for j, u := range sol.Uniform {
		if u.Candidate != s.Candidates[j] {
			return fmt.Errorf("%w: its uniform plan %d is %s, the sweep's candidate %s", ErrForeign, j, u.Candidate, s.Candidates[j])
		}
	}
	return nil
}
