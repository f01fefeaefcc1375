package plan

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"forge/model"
)

// randomSweep is a whole sweep of n units × k candidates with random
// bytes (not those of any format: Solve takes them as given) and random
// values, some negative (noise), some candidates dominated.
func randomSweep(rng *rand.Rand, n, k int, maxBytes int64) *Sweep {
	s := &Sweep{Version: SweepVersion, UnitKind: "matrix", FixedBytes: 1000,
		Model: SweepSource{Fingerprint: "f"}, Trace: SweepTrace{SHA256: "t"}, Base: SweepBase{KL: 0.01}}
	for j := range k {
		s.Candidates = append(s.Candidates, Candidate{Format: fmt.Sprintf("LUT%d per-tensor + pcs", j+1)})
	}
	for i := range n {
		u := Unit{Key: fmt.Sprintf("%d.gate", i), Layer: i, Matrices: []string{fmt.Sprintf("%d.gate", i)},
			Names: []string{fmt.Sprintf("layers.%d.mlp.gate_proj.weight", i)}, Shapes: [][2]int{{8, 8}}, Params: 100 + rng.Int64N(1000)}
		s.Units = append(s.Units, u)
		for _, c := range s.Candidates {
			s.Measurements = append(s.Measurements, Measurement{Unit: u.Key, Candidate: c, Bytes: 1 + rng.Int64N(maxBytes),
				DKL: rng.Float64()*0.5 - 0.01, SE: rng.Float64() * 0.01, P99: rng.Float64() * 3})
		}
	}
	return s
}

// bruteForce returns the least objective of any plan within limit unit
// bytes (+Inf if none), trying all kⁿ.
func bruteForce(s *Sweep, limit int64, pick func(Measurement) float64) float64 {
	tab, err := measurementTable(s)
	if err != nil {
		panic(err)
	}
	n, k := len(tab), len(s.Candidates)
	best := math.Inf(1)
	idx := make([]int, n)
	for {
		var b int64
		var v float64
		for i, j := range idx {
			b += tab[i][j].Bytes
			v += pick(tab[i][j])
		}
		if b <= limit && v < best {
			best = v
		}
		i := 0
		for ; i < n; i++ {
			if idx[i]++; idx[i] < k {
				break
			}
			idx[i] = 0
		}
		if i == n {
			return best
		}
	}
}

func sizeBudget(t *testing.T, s *Sweep, unitBytes int64) Budget {
	t.Helper()
	b, err := ParseBudget(fmt.Sprintf("%dB", unitBytes+s.FixedBytes))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSolution verifies what a solution says about itself: its choices
// are measurements of s, its totals are their sums, and it fits.
func checkSolution(t *testing.T, s *Sweep, sol *Solution, limit int64, pick func(Measurement) float64) {
	t.Helper()
	tab, _ := measurementTable(s)
	var b int64
	var v, d float64
	for i, c := range sol.Units {
		if c.Unit != s.Units[i].Key {
			t.Fatalf("unit %d is %q, want %q", i, c.Unit, s.Units[i].Key)
		}
		found := false
		for _, m := range tab[i] {
			found = found || m == c.Measurement
		}
		if !found {
			t.Fatalf("unit %s: %+v is not one of its measurements", c.Unit, c.Measurement)
		}
		b += c.Bytes
		v += pick(c.Measurement)
		d += c.DKL
	}
	if b != sol.UnitBytes || b+s.FixedBytes != sol.Bytes || v != sol.Value || d != sol.DKL || sol.KL != s.Base.KL+d {
		t.Fatalf("totals: %+v; the choices sum to %d bytes, value %g, ΔKL %g", sol.Prediction, b, v, d)
	}
	if b > limit || sol.MaxUnitBytes != limit {
		t.Fatalf("%d bytes over the budget of %d (recorded %d)", b, limit, sol.MaxUnitBytes)
	}
	if sol.LowerBound > sol.Value {
		t.Fatalf("lower bound %g above the value %g", sol.LowerBound, sol.Value)
	}
}

// TestSolveBruteForce: on random small instances, the program at
// resolution 1 finds the brute-force optimum exactly (and says its gap is
// 0); at coarser resolutions it never exceeds the budget and is within
// its reported gap of the optimum (the lower bound is below the optimum).
// Sums are compared with 1e-12: the program and the brute force add the
// same numbers in the same unit order, so only that order matters, and
// it is the same.
func TestSolveBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		s := randomSweep(rng, 5, 3, 5000)
		obj := []string{"mean", "p99", ""}[trial%3]
		pick, _ := objective(obj)
		tab, _ := measurementTable(s)
		var lo, hi int64
		for _, ms := range tab {
			lo += minBytes(ms)
			hi += maxBytes(ms)
		}
		if lo == hi {
			continue
		}
		limit := lo + rng.Int64N(hi-lo)
		opt := bruteForce(s, limit, pick)
		for _, res := range []int64{1, 3, 64, 1000, 0} {
			sol, err := Solve(s, SolveOptions{Budget: sizeBudget(t, s, limit), Objective: obj, Resolution: res})
			if err != nil {
				t.Fatalf("trial %d, resolution %d: %v", trial, res, err)
			}
			checkSolution(t, s, sol, limit, pick)
			const eps = 1e-12
			switch {
			case res == 1 && (math.Abs(sol.Value-opt) > eps || sol.LowerBound != sol.Value || sol.Resolution != 1):
				t.Fatalf("trial %d: resolution 1 gives %g (bound %g), the optimum is %g", trial, sol.Value, sol.LowerBound, opt)
			case sol.LowerBound > opt+eps || sol.Value < opt-eps:
				t.Fatalf("trial %d, resolution %d: value %g, bound %g; the optimum %g is outside [bound, value]",
					trial, res, sol.Value, sol.LowerBound, opt)
			case res == 0 && sol.Resolution != max(1, (limit-lo+autoCells-2)/(autoCells-1)):
				t.Fatalf("trial %d: automatic resolution %d", trial, sol.Resolution)
			}
		}
	}
}

// TestSolveAutoResolution: where the automatic resolution is coarser than
// a byte, the plan still fits and brackets the exact (resolution 1)
// optimum with its bound.
func TestSolveAutoResolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := randomSweep(rng, 20, 4, 200_000)
	tab, _ := measurementTable(s)
	var lo, hi int64
	for _, ms := range tab {
		lo += minBytes(ms)
		hi += maxBytes(ms)
	}
	limit := lo + (hi-lo)/2
	exact, err := Solve(s, SolveOptions{Budget: sizeBudget(t, s, limit), Resolution: 1})
	if err != nil {
		t.Fatal(err)
	}
	auto, err := Solve(s, SolveOptions{Budget: sizeBudget(t, s, limit)})
	if err != nil {
		t.Fatal(err)
	}
	pick, _ := objective("mean")
	checkSolution(t, s, auto, limit, pick)
	if auto.Resolution <= 1 || (limit-lo)/auto.Resolution >= autoCells {
		t.Errorf("automatic resolution %d for %d bytes of room", auto.Resolution, limit-lo)
	}
	if auto.LowerBound > exact.Value+1e-12 || auto.Value < exact.Value-1e-12 {
		t.Errorf("auto %g (bound %g) does not bracket the optimum %g", auto.Value, auto.LowerBound, exact.Value)
	}
	// The uniform plans are the sums of one candidate's column.
	for j, u := range auto.Uniform {
		var b int64
		for i := range tab {
			b += tab[i][j].Bytes
		}
		if u.Candidate != s.Candidates[j] || u.UnitBytes != b || u.Bytes != b+s.FixedBytes || u.Fits != (b <= limit) {
			t.Errorf("uniform %d: %+v, want %d unit bytes", j, u, b)
		}
	}
}

// boundsSweep is one unit of 1000 parameters with a 2-bit and a 4-bit
// candidate (250 and 500 bytes) and 1 MiB of fixed bytes.
func boundsSweep() *Sweep {
	s := &Sweep{Version: SweepVersion, UnitKind: "matrix", FixedBytes: 1 << 20,
		Model: SweepSource{Fingerprint: "f"}, Trace: SweepTrace{SHA256: "t"},
		Candidates: []Candidate{{Format: "LUT2 per-tensor + pcs"}, {Format: "LUT4 per-tensor + pcs"}},
		Units: []Unit{{Key: "0.gate", Matrices: []string{"0.gate"}, Names: []string{"layers.0.mlp.gate_proj.weight"},
			Shapes: [][2]int{{10, 100}}, Params: 1000}, {Key: "1.gate", Matrices: []string{"1.gate"}, Names: []string{"layers.1.mlp.gate_proj.weight"},
			Shapes: [][2]int{{10, 100}}, Params: 1000}}}
	for _, u := range s.Units {
		s.Measurements = append(s.Measurements,
			Measurement{Unit: u.Key, Candidate: s.Candidates[0], Bytes: 250, DKL: 0.2},
			Measurement{Unit: u.Key, Candidate: s.Candidates[1], Bytes: 500, DKL: 0.01})
	}
	return s
}

// TestSolveErrors: budgets out of bounds name the bounds in the budget's
// own unit; incomplete sweeps and bad options are refused.
func TestSolveErrors(t *testing.T) {
	budget := func(s string) Budget {
		b, err := ParseBudget(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shard := boundsSweep()
	shard.Shard = &Shard{I: 1, N: 4}
	missing := boundsSweep()
	missing.Measurements = missing.Measurements[:3]
	twice := boundsSweep()
	twice.Measurements[3] = twice.Measurements[2]
	nan := boundsSweep()
	nan.Measurements[1].DKL = math.NaN()
	cases := []struct {
		name string
		s    *Sweep
		opt  SolveOptions
		want []string
		is   error
	}{
		{"below in bpw", boundsSweep(), SolveOptions{Budget: budget("1.5bpw")}, []string{"1.5bpw is below the smallest plan", "needs 2bpw"}, ErrBudget},
		{"below in MiB", boundsSweep(), SolveOptions{Budget: budget("1MiB")}, []string{"1MiB is below", "needs 1.001MiB"}, ErrBudget},
		{"below in B", boundsSweep(), SolveOptions{Budget: budget("1049000B")}, []string{"needs 1049076B"}, ErrBudget},
		{"at the top in bpw", boundsSweep(), SolveOptions{Budget: budget("4bpw")}, []string{"at or above the largest plan", "4bpw", "nothing to choose"}, ErrBudget},
		{"above in GB", boundsSweep(), SolveOptions{Budget: budget("1GB")}, []string{"at or above", "0.001GB", "nothing to choose"}, ErrBudget},
		{"no budget", boundsSweep(), SolveOptions{}, []string{"give bits per weight or a size"}, ErrBudget},
		{"shard", shard, SolveOptions{Budget: budget("3bpw")}, []string{"shard 1/4", "merge"}, ErrSweep},
		{"missing", missing, SolveOptions{Budget: budget("3bpw")}, []string{"1.gate has no measurement in LUT4 per-tensor + pcs"}, ErrSweep},
		{"twice", twice, SolveOptions{Budget: budget("3bpw")}, []string{"measured twice"}, ErrSweep},
		{"not finite", nan, SolveOptions{Budget: budget("3bpw")}, []string{"not finite"}, ErrSweep},
		{"objective", boundsSweep(), SolveOptions{Budget: budget("3bpw"), Objective: "max"}, []string{`objective "max"`}, nil},
		{"resolution", boundsSweep(), SolveOptions{Budget: budget("3bpw"), Resolution: -1}, []string{"resolution -1"}, nil},
	}
	for _, c := range cases {
		_, err := Solve(c.s, c.opt)
		if err == nil || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", c.name, err, w)
			}
		}
	}
	// Inside the bounds: 3 bpw is 750 bytes, room for one LUT4 unit.
	sol, err := Solve(boundsSweep(), SolveOptions{Budget: budget("3bpw")})
	if err != nil || sol.UnitBytes != 750 || sol.BPW != 3 || math.Abs(sol.DKL-0.21) > 1e-15 {
		t.Errorf("3bpw: %+v, %v", sol, err)
	}
}

// smallConfig is a tiny hybrid model: DeltaNet layers with attention at
// every fourth.
func smallConfig(layers int) *model.Config {
	c := &model.Config{Vocab: 64, Hidden: 32, Intermediate: 64, Heads: 2, KVHeads: 1, HeadDim: 16,
		KeyHeads: 1, ValueHeads: 2, KeyDim: 8, ValueDim: 8, ConvKernel: 4}
	for i := range layers {
		kind := model.DeltaNet
		if i%4 == 3 {
			kind = model.Attention
		}
		c.Layers = append(c.Layers, kind)
	}
	return c
}
