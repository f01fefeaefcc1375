package plan

import (
	"fmt"
	"math"
)

// SolveOptions configures Solve. The zero value is not usable: a Budget
// is required; the rest defaults.
type SolveOptions struct {
	Budget Budget
	// Objective is what the plan minimizes, summed over the units: "mean"
	// (the default: Measurement.DKL, the mean KL increase) or "p99"
	// (Measurement.P99, the 99th percentile of the per-position KL).
	Objective string
	// Resolution is the bytes per cell of the dynamic program; 0 picks
	// the smallest whole number of bytes that keeps the table at most
	// 1<<16 cells wide.
	Resolution int64
	// Path is where the sweep was read from, recorded in the solution's
	// plan; optional.
	Path string
}

// autoCells is the widest table an automatic resolution gives.
const autoCells = 1 << 16

// Limits on a stated resolution's table, so that a bad one is an error
// rather than an allocation that takes the machine down.
const (
	maxCells      = 1 << 26 // per unit
	maxTableBytes = 1 << 30 // the choice table, one byte per unit and cell
)

// Solve chooses one candidate per unit of a whole sweep (a multiple-choice
// knapsack): with x[u] the candidate of unit u, it minimizes
//
//	Σ_u obj(u, x[u])   subject to   Σ_u bytes(u, x[u]) ≤ B,
//
// obj being Measurement.DKL ("mean") or Measurement.P99 ("p99") and B the
// budget's bytes for the units (Budget). The sum treats the units'
// damage as additive, which it only approximately is: a plan's prediction
// must be checked on the combined model (docs/quantization.md §4.3).
//
// It is solved exactly by dynamic programming over bytes in cells of r
// bytes (the resolution): with m_u the smallest bytes of unit u, D =
// B − Σ m_u and W = ⌊D/r⌋ cells, f_u(w) = min_c f_{u−1}(w − ⌈(bytes(u,c)
// − m_u)/r⌉) + obj(u, c) over the candidates that fit. Rounding costs up
// keeps the exact total within B (Σ ⌈d/r⌉·r ≥ Σ d); the same program with
// costs rounded down admits every plan within B, so its optimum is a
// lower bound on the true one, and the difference between the two
// (Prediction.Value − Prediction.LowerBound, 0 at r = 1) is the most the
// resolution can have cost. Time O(units × candidates × cells), memory
// units × cells bytes.
//
// Errors (wrapping ErrBudget, bounds in the budget's own unit): a budget
// below the smallest plan (every unit at its smallest candidate), or at
// or above the largest (every unit at its largest: nothing to choose).
// Errors wrapping ErrSweep: a shard rather than a whole sweep, a missing,
// repeated or non-finite measurement, a candidate that is not a format.
func Solve(s *Sweep, opt SolveOptions) (*Solution, error) {
	pick, err := objective(opt.Objective)
	if err != nil {
		return nil, err
	}
	if s.Shard != nil {
		return nil, fmt.Errorf("%w: this is shard %s of a sweep, not a whole one: merge all %d shards into one file first (forge sweep merge)",
			ErrSweep, s.Shard, s.Shard.N)
	}
	tab, err := measurementTable(s)
	if err != nil {
		return nil, err
	}
	var params, lo, hi int64
	for i, u := range s.Units {
		params += u.Params
		lo += minBytes(tab[i])
		hi += maxBytes(tab[i])
	}
	if params <= 0 {
		return nil, fmt.Errorf("%w: its units count no parameters", ErrSweep)
	}
	limit, err := opt.Budget.unitBytes(s, params)
	if err != nil {
		return nil, err
	}
	b := opt.Budget
	switch {
	case limit < lo:
		return nil, fmt.Errorf("%w: %s is below the smallest plan: every unit at its smallest candidate needs %s", ErrBudget,
			b, b.express(lo, params, s.FixedBytes, true))
	case limit >= hi:
		return nil, fmt.Errorf("%w: %s is at or above the largest plan (every unit at its largest candidate: %s): there is nothing to choose; give a budget below %s",
			ErrBudget, b, b.express(hi, params, s.FixedBytes, false), b.express(hi, params, s.FixedBytes, false))
	}
	res, cells, err := resolution(opt.Resolution, limit-lo, len(s.Units))
	if err != nil {
		return nil, err
	}
	val := make([][]float64, len(tab))
	up := make([][]int64, len(tab))
	down := make([][]int64, len(tab))
	for i, ms := range tab {
		m := minBytes(ms)
		for _, x := range ms {
			d := x.Bytes - m
			val[i] = append(val[i], pick(x))
			up[i] = append(up[i], (d+res-1)/res)
			down[i] = append(down[i], d/res)
		}
	}
	_, choice := knapsack(up, val, cells, true)
	lower, _ := knapsack(down, val, cells, false)
	sol := newSolution(s, tab, choice, opt, pick, limit, params)
	sol.Resolution = res
	sol.LowerBound = math.Min(lower, sol.Value)
	return sol, nil
}

// objective returns the measurement value the objective named o sums.
func objective(o string) (func(Measurement) float64, error) {
	switch o {
	case "", "mean":
		return func(m Measurement) float64 { return m.DKL }, nil
	case "p99":
		return func(m Measurement) float64 { return m.P99 }, nil
	}
	return nil, fmt.Errorf("objective %q: want mean (the mean KL increase) or p99 (its 99th percentile)", o)
}

// measurementTable returns the measurements of s as [unit][candidate] in
// the order of s.Units and s.Candidates, each present once, finite and
// with a candidate that is a format, and every unit's matrix keys plan
// keys.
func measurementTable(s *Sweep) ([][]Measurement, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrSweep, fmt.Sprintf(format, args...))
	}
	k := len(s.Candidates)
	switch {
	case len(s.Units) == 0 || k == 0:
		return nil, bad("no units or no candidates")
	case k > 256:
		return nil, bad("%d candidates; the planner takes at most 256", k)
	}
	unit := map[string]int{}
	for i, u := range s.Units {
		if _, ok := unit[u.Key]; ok {
			return nil, bad("unit %q is listed twice", u.Key)
		}
		unit[u.Key] = i
		for _, m := range u.Matrices {
			if _, _, err := splitKey(m); err != nil {
				return nil, bad("unit %s: matrix key %q: %v", u.Key, m, err)
			}
		}
	}
	cand := map[Candidate]int{}
	for j, c := range s.Candidates {
		if _, err := c.Spec(); err != nil {
			return nil, bad("candidate %q: %v", c, err)
		}
		cand[c] = j
	}
	tab := make([][]Measurement, len(s.Units))
	seen := make([][]bool, len(s.Units))
	for i := range tab {
		tab[i] = make([]Measurement, k)
		seen[i] = make([]bool, k)
	}
	for _, m := range s.Measurements {
		i, ok1 := unit[m.Unit]
		j, ok2 := cand[m.Candidate]
		switch {
		case !ok1 || !ok2:
			return nil, bad("measurement of unknown unit %q or candidate %q", m.Unit, m.Candidate)
		case seen[i][j]:
			return nil, bad("unit %s, %s measured twice", m.Unit, m.Candidate)
		case m.Bytes < 0:
			return nil, bad("unit %s, %s: %d bytes", m.Unit, m.Candidate, m.Bytes)
		}
		for _, v := range []float64{m.DKL, m.SE, m.P99, m.Top1} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, bad("unit %s, %s: a value is not finite", m.Unit, m.Candidate)
			}
		}
		seen[i][j] = true
		tab[i][j] = m
	}
	for i, u := range s.Units {
		for j, c := range s.Candidates {
			if !seen[i][j] {
				return nil, bad("unit %s has no measurement in %s: the sweep is incomplete (interrupted, or a shard?): finish or merge it first", u.Key, c)
			}
		}
	}
	return tab, nil
}

func minBytes(ms []Measurement) int64 {
	m := ms[0].Bytes
	for _, x := range ms[1:] {
		m = min(m, x.Bytes)
	}
	return m
}

func maxBytes(ms []Measurement) int64 {
	m := ms[0].Bytes
	for _, x := range ms[1:] {
		m = max(m, x.Bytes)
	}
	return m
}

// resolution returns the bytes per cell and the number of cells past the
// smallest plan (W: cells 0…W) for a room of d bytes, from the stated
// resolution r (0: automatic).
func resolution(r, d int64, units int) (int64, int, error) {
	if r < 0 {
		return 0, 0, fmt.Errorf("resolution %d: want a positive number of bytes per cell, or 0 for automatic", r)
	}
	if r == 0 {
		r = max(1, (d+autoCells-2)/(autoCells-1))
	}
	w := d / r
	if w+1 > maxCells || (w+1)*int64(units) > maxTableBytes {
		return 0, 0, fmt.Errorf("resolution %d bytes: the budget leaves %d bytes to share out, %d cells for each of %d units: too many; "+
			"give a coarser resolution (0 picks one with at most %d cells)", r, d, w+1, units, autoCells)
	}
	return r, int(w), nil
}

// knapsack solves the multiple-choice knapsack over cells 0…w: item u
// takes exactly one candidate c of cost cost[u][c] cells (≥ 0, some 0)
// and value val[u][c]; it returns the least total value within w cells
// and, with choices, each item's candidate. Ties go to the earlier
// candidate, so the result is deterministic.
func knapsack(cost [][]int64, val [][]float64, w int, choices bool) (float64, []int) {
	n := len(cost)
	prev := make([]float64, w+1) // f_0 = 0: no units, no value, at any size
	cur := make([]float64, w+1)
	var ch []uint8
	if choices {
		ch = make([]uint8, n*(w+1))
	}
	for u := range n {
		for x := range cur {
			cur[x] = math.Inf(1)
		}
		var row []uint8
		if choices {
			row = ch[u*(w+1) : (u+1)*(w+1)]
		}
		for c, k := range cost[u] {
			if k > int64(w) {
				continue
			}
			v, off := val[u][c], int(k)
			for x := off; x <= w; x++ {
				if t := prev[x-off] + v; t < cur[x] {
					cur[x] = t
					if row != nil {
						row[x] = uint8(c)
					}
				}
			}
		}
		prev, cur = cur, prev
	}
	if !choices {
		return prev[w], nil
	}
	pick := make([]int, n)
	x := w
	for u := n - 1; u >= 0; u-- {
		c := int(ch[u*(w+1)+x])
		pick[u] = c
		x -= int(cost[u][c])
	}
	return prev[w], pick
}
