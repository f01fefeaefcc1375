package plan

import (
	"math"
	"path/filepath"

	"forge/model"
)

// Solution is a plan Solve chose: a candidate per unit, what it is
// predicted to cost and score, how close to the optimum it is, and the
// uniform plans beside it.
type Solution struct {
	Sweep SweepRef `json:"sweep"`
	Prediction
	// MaxUnitBytes is the budget in bytes of the units.
	MaxUnitBytes int64 `json:"max_unit_bytes"`
	// FixedBytes is what the bundle stores outside the units
	// (Sweep.FixedBytes).
	FixedBytes int64    `json:"fixed_bytes"`
	Units      []Choice `json:"units"`
	// Uniform is, for each candidate in the sweep's order, the plan that
	// gives every unit that candidate.
	Uniform []Uniform `json:"uniform"`
}

// Prediction is what a plan is predicted to cost and score on the sweep's
// trace, additivity assumed (Solve).
type Prediction struct {
	BaseKL float64 `json:"base_kl"` // the reference's own KL on the sweep's rows (Sweep.Base.KL)
	DKL    float64 `json:"dkl"`     // Σ over the units of the chosen candidate's ΔKL
	// DKLSE is √(Σ SE²), the units' standard errors taken as independent.
	DKLSE float64 `json:"dkl_se"`
	KL    float64 `json:"kl"` // BaseKL + DKL
	// Value is the objective's sum (DKL for "mean", Σ P99 for "p99");
	// LowerBound is a value no plan within the budget is below (Solve):
	// Value − LowerBound is the most the resolution can have cost.
	Value      float64 `json:"objective_value"`
	LowerBound float64 `json:"lower_bound"`
	UnitBytes  int64   `json:"unit_bytes"` // what the units store
	Bytes      int64   `json:"bytes"`      // UnitBytes + the sweep's fixed bytes: the whole bundle
	Params     int64   `json:"params"`     // the units' parameters
	BPW        float64 `json:"bpw"`        // 8·UnitBytes / Params
	Resolution int64   `json:"resolution"` // bytes per cell of the dynamic program
}

// SweepRef names the sweep a plan was chosen from and how.
type SweepRef struct {
	Path             string `json:"path"`
	ModelFingerprint string `json:"model_fingerprint"`
	TraceSHA256      string `json:"trace_sha256"`
	UnitKind         string `json:"unit_kind"`
	Objective        string `json:"objective"` // "mean" or "p99"
	Budget           string `json:"budget"`    // as given: "2.6bpw", "3.1GiB"
}

// Choice is a unit and the measurement of the candidate chosen for it.
type Choice struct {
	Matrices []string `json:"matrices"` // the unit's plan keys
	Params   int64    `json:"params"`
	Measurement
}

// Uniform is the plan that gives every unit one candidate.
type Uniform struct {
	Candidate Candidate `json:"candidate"`
	UnitBytes int64     `json:"unit_bytes"`
	Bytes     int64     `json:"bytes"` // with the fixed bytes
	BPW       float64   `json:"bpw"`
	DKL       float64   `json:"dkl"`
	DKLSE     float64   `json:"dkl_se"`
	Value     float64   `json:"objective_value"`
	Fits      bool      `json:"fits"` // within the budget
}

// newSolution assembles the solution of choice (a candidate index per
// unit) from the measurement table of s.
func newSolution(s *Sweep, tab [][]Measurement, choice []int, opt SolveOptions, pick func(Measurement) float64, limit, params int64) *Solution {
	obj := opt.Objective
	if obj == "" {
		obj = "mean"
	}
	path := opt.Path
	if abs, err := filepath.Abs(path); path != "" && err == nil {
		path = abs
	}
	sol := &Solution{
		Sweep: SweepRef{Path: path, ModelFingerprint: s.Model.Fingerprint, TraceSHA256: s.Trace.SHA256,
			UnitKind: s.UnitKind, Objective: obj, Budget: opt.Budget.String()},
		MaxUnitBytes: limit, FixedBytes: s.FixedBytes,
	}
	var se2 float64
	p := &sol.Prediction
	for i, u := range s.Units {
		m := tab[i][choice[i]]
		sol.Units = append(sol.Units, Choice{Matrices: u.Matrices, Params: u.Params, Measurement: m})
		p.UnitBytes += m.Bytes
		p.DKL += m.DKL
		p.Value += pick(m)
		se2 += m.SE * m.SE
	}
	p.BaseKL, p.DKLSE, p.KL = s.Base.KL, math.Sqrt(se2), s.Base.KL+p.DKL
	p.Bytes, p.Params, p.BPW = p.UnitBytes+s.FixedBytes, params, 8*float64(p.UnitBytes)/float64(params)
	for j, c := range s.Candidates {
		un := Uniform{Candidate: c}
		var se2 float64
		for i := range s.Units {
			m := tab[i][j]
			un.UnitBytes += m.Bytes
			un.DKL += m.DKL
			un.Value += pick(m)
			se2 += m.SE * m.SE
		}
		un.DKLSE, un.Bytes, un.BPW = math.Sqrt(se2), un.UnitBytes+s.FixedBytes, 8*float64(un.UnitBytes)/float64(params)
		un.Fits = un.UnitBytes <= limit
		sol.Uniform = append(sol.Uniform, un)
	}
	return sol
}

// Plan is the solution as a plan: every matrix of every unit at its
// unit's chosen candidate, with the prediction and the sweep recorded
// (Marshal writes it as a plan file; quantize refuses it for another
// model, CheckModel).
func (sol *Solution) Plan() *Plan {
	p := &Plan{Parts: map[model.Part]Spec{}, Matrices: map[string]Spec{}, Basis: map[int]bool{}}
	for _, c := range sol.Units {
		s, err := c.Candidate.Spec()
		if err != nil {
			panic("plan: a solution's candidate is not a format: " + err.Error()) // Solve checked them
		}
		for _, k := range c.Matrices {
			p.Matrices[k] = s
		}
	}
	pred, ref := sol.Prediction, sol.Sweep
	p.Prediction, p.Sweep = &pred, &ref
	return p
}
