package chart

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/plan"
)

// parts of a hand-made model of four layers (attention at 3): each part's
// matrices and parameters.
var handParts = []struct {
	name     string
	matrices []string
	params   int64
}{
	{"mixer", []string{"qkv", "z", "out"}, 1500},
	{"attn", []string{"q", "o"}, 1000},
	{"kv", []string{"k", "v"}, 500},
	{"mlp", []string{"gate", "up", "down"}, 3000},
}

// handUnits are the units of kind ("part", "layer" or "band:2") of the
// hand-made model, the head last as its own unit.
func handUnits(kind string) []plan.Unit {
	var parts []plan.Unit
	for l := range 4 {
		for _, p := range handParts {
			attention := p.name == "attn" || p.name == "kv"
			if (p.name == "mixer" && l == 3) || (attention && l != 3) {
				continue // layers 0-2 are DeltaNet layers, 3 is attention
			}
			u := plan.Unit{Key: fmt.Sprintf("%d.%s", l, p.name), Layer: l, Params: p.params}
			for _, m := range p.matrices {
				u.Matrices = append(u.Matrices, fmt.Sprintf("%d.%s", l, m))
			}
			parts = append(parts, u)
		}
	}
	var us []plan.Unit
	at := map[string]int{}
	for _, p := range parts {
		k, layer := p.Key, p.Layer
		switch kind {
		case "layer":
			k = fmt.Sprint(p.Layer)
		case "band:2":
			layer = p.Layer / 2 * 2
			k = fmt.Sprintf("%d-%d", layer, layer+1)
		}
		i, ok := at[k]
		if !ok {
			i = len(us)
			at[k] = i
			us = append(us, plan.Unit{Key: k, Layer: layer})
		}
		us[i].Matrices = append(us[i].Matrices, p.Matrices...)
		us[i].Params += p.Params
	}
	return append(us, plan.Unit{Key: "head", Layer: 4, Matrices: []string{"head"}, Params: 4000})
}

// handSweep is a whole sweep of the hand-made model's units of kind in
// LUT2, LUT4 and bf16: bytes of b bits per weight plus 64 (codebook and
// scales) for the LUTs, and a random sensitivity per unit (seeded) that
// LUT4 divides by ten and bf16 makes 0.
func handSweep(kind string) *plan.Sweep {
	cands := []plan.Candidate{{Format: "LUT2 per-tensor + pcs"}, {Format: "LUT4 per-tensor + pcs"}, {Format: "bf16"}}
	s := &plan.Sweep{Version: plan.SweepVersion, Model: plan.SweepSource{Path: "/models/hand-4l", Fingerprint: "f00d"},
		Trace:    plan.SweepTrace{Path: "/traces/chat.trace", SHA256: "beef", Rows: 6, Positions: 1200},
		UnitKind: kind, Candidates: cands, Units: handUnits(kind), FixedBytes: 5000, Base: plan.SweepBase{KL: 0.0004, Top1: 1}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, u := range s.Units {
		sens := 0.001 + 0.05*r.Float64()
		for j, c := range cands {
			bits := []int64{2, 4, 16}[j]
			b, dkl := u.Params*bits/8, sens*[]float64{1, 0.1, 0}[j]
			if j < 2 {
				b += 64
			}
			s.Measurements = append(s.Measurements, plan.Measurement{Unit: u.Key, Candidate: c, Bytes: b,
				DKL: dkl, SE: dkl / 10, P99: 8*dkl + 0.01*float64(2-j), Top1: 1 - dkl})
		}
	}
	return s
}

// checkFigure checks that files are stem.png, a PNG of height 660 pixels
// and at least 1080 wide (5.5 × 9 inches at 120 dpi, wider with a legend
// column), and stem.svg, which parses as XML with an <svg> root and
// contains every string of want.
func checkFigure(t *testing.T, stem string, files []string, want ...string) {
	t.Helper()
	if len(files) != 2 || files[0] != stem+".png" || files[1] != stem+".svg" {
		t.Fatalf("files %q, want %s.png and %s.svg", files, stem, stem)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	if b := img.Bounds(); b.Dy() != 660 || b.Dx() < 1080 || b.Dx() > 2400 {
		t.Errorf("%s: %d×%d pixels", files[0], b.Dx(), b.Dy())
	}
	svg, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Errorf("%s: %v", files[1], err)
			}
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("%s: root <%s>, want <svg>", files[1], root)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("%s: no text %q", files[1], w)
		}
	}
}

func TestChartSensitivity(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		kind string
		want []string
	}{
		{"part", []string{"mlp, LUT2 per-tensor + pcs", "mixer, LUT4 per-tensor + pcs", "attn, LUT2 per-tensor + pcs",
			"kv, LUT4 per-tensor + pcs", "head, LUT2 per-tensor + pcs", "hand-4l", "chat.trace, its first 6 rows",
			"not drawn (ΔKL ≤ 0 at every unit): bf16", "head"}},
		{"layer", []string{"LUT2 per-tensor + pcs", "LUT4 per-tensor + pcs", "not drawn (ΔKL ≤ 0 at every unit): bf16", "layer units"}},
		{"band:2", []string{"0-1", "2-3", "head", "LUT4 per-tensor + pcs"}},
	}
	for _, c := range cases {
		stem := filepath.Join(dir, strings.ReplaceAll(c.kind, ":", "")+"-sensitivity")
		files, err := Sensitivity(stem, handSweep(c.kind))
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		checkFigure(t, stem, files, c.want...)
	}
	// A series per part and candidate: four parts and the head in LUT2
	// and LUT4 (bf16's ΔKL is 0 everywhere).
	fig, err := sensitivityFigure(handSweep("part"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.Series) != 10 {
		t.Errorf("%d series, want 10", len(fig.Series))
	}
	for _, s := range fig.Series {
		if strings.HasPrefix(s.Label, "head") && (len(s.X) != 1 || s.X[0] != 4) {
			t.Errorf("%s at %v, want one point at x = 4 layers", s.Label, s.X)
		}
		if strings.HasPrefix(s.Label, "mlp") && len(s.X) != 4 {
			t.Errorf("%s: %d points, want one per layer", s.Label, len(s.X))
		}
	}
	// Same sweep, same bytes.
	a, _ := Sensitivity(filepath.Join(dir, "a"), handSweep("part"))
	b, _ := Sensitivity(filepath.Join(dir, "b"), handSweep("part"))
	for i := range a {
		x, _ := os.ReadFile(a[i])
		y, _ := os.ReadFile(b[i])
		if !bytes.Equal(x, y) {
			t.Errorf("%s and %s differ", a[i], b[i])
		}
	}
}

// value is the objective's value of a measurement.
func value(objective string, m plan.Measurement) float64 {
	if objective == "p99" {
		return m.P99
	}
	return m.DKL
}

// TestChartFront checks the front against every plan of a sweep of ten
// units in three candidates (3^10 plans): each point is within its budget
// and no plan of at most its bytes has a smaller value (the sweep is
// small enough for a resolution of 1 byte: exact), the points fall in
// value as bytes grow, and the front runs from the smallest plan to the
// best one.
func TestChartFront(t *testing.T) {
	s := handSweep("part")
	type plan_ struct {
		bytes int64
		value float64
	}
	for _, objective := range []string{"mean", "p99"} {
		front, err := Front(context.Background(), s, FrontOptions{Objective: objective})
		if err != nil {
			t.Fatal(err)
		}
		if len(front) < 5 {
			t.Fatalf("%s: %d points on the front", objective, len(front))
		}
		// Every plan: unit i takes candidate (k / 3^i) mod 3.
		n, k := len(s.Units), len(s.Candidates)
		total := int(math.Pow(float64(k), float64(n)))
		var lo, hi int64 = math.MaxInt64, 0
		bestValue := math.Inf(1)
		all := make([]plan_, total)
		for x := range total {
			var p plan_
			for i, c := 0, x; i < n; i, c = i+1, c/k {
				m := s.Measurements[i*k+c%k]
				p.bytes += m.Bytes
				p.value += value(objective, m)
			}
			all[x] = p
			lo, hi, bestValue = min(lo, p.bytes), max(hi, p.bytes), math.Min(bestValue, p.value)
		}
		for i, pt := range front {
			if pt.UnitBytes > pt.Budget || pt.Bytes != pt.UnitBytes+s.FixedBytes || pt.Resolution != 1 {
				t.Errorf("%s: point %d: %d bytes under a budget of %d (bundle %d, resolution %d)", objective, i, pt.UnitBytes, pt.Budget, pt.Bytes, pt.Resolution)
			}
			if i > 0 && (pt.UnitBytes <= front[i-1].UnitBytes || pt.Value >= front[i-1].Value) {
				t.Errorf("%s: point %d (%d B, %g) does not improve on point %d (%d B, %g)", objective, i, pt.UnitBytes, pt.Value, i-1, front[i-1].UnitBytes, front[i-1].Value)
			}
			for _, p := range all {
				// Sums of the same values in another order: 1e-12 relative.
				if p.bytes <= pt.UnitBytes && p.value < pt.Value-1e-12*math.Max(1, pt.Value) {
					t.Fatalf("%s: point %d (%d B, %g) is beaten by a plan of %d B, %g", objective, i, pt.UnitBytes, pt.Value, p.bytes, p.value)
				}
			}
		}
		first, last := front[0], front[len(front)-1]
		if first.UnitBytes != lo || last.Value != bestValue || last.UnitBytes > hi {
			t.Errorf("%s: front from %d B to %g, want from the smallest plan (%d B) to the best value %g", objective, first.UnitBytes, last.Value, lo, bestValue)
		}
		if objective == "mean" && (math.Abs(last.KL-s.Base.KL-last.DKL) > 1e-15 || last.BPW <= first.BPW) {
			t.Errorf("the best plan's prediction %+v", last.Prediction)
		}
	}
}

func TestChartPareto(t *testing.T) {
	dir := t.TempDir()
	s := handSweep("part")
	b, err := plan.ParseBudget("5bpw")
	if err != nil {
		t.Fatal(err)
	}
	sol, err := plan.Solve(s, plan.SolveOptions{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	stem := filepath.Join(dir, "pareto")
	files, err := Pareto(context.Background(), stem, s, sol, ParetoOptions{Measured: &Measured{KL: sol.KL * 1.2, SE: sol.DKLSE}})
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, stem, files, "Predicted Pareto front", "hand-4l", "LUT2 per-tensor + pcs", "LUT4 per-tensor + pcs", "bf16",
		"chosen under 5bpw", "measured on the bundle", "every unit at one candidate", "least predicted ΔKL at each size")
	// The p99 objective draws its own front, without a measurement.
	sol99, err := plan.Solve(s, plan.SolveOptions{Budget: b, Objective: "p99"})
	if err != nil {
		t.Fatal(err)
	}
	files, err = Pareto(context.Background(), stem+"-p99", s, sol99, ParetoOptions{Budgets: 8})
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, stem+"-p99", files, "objective p99", "least predicted Σ p99 at each size")
	if _, err := Pareto(context.Background(), stem+"-bad", s, sol99, ParetoOptions{Measured: &Measured{KL: 0.01}}); err == nil {
		t.Error("a measured KL with the p99 objective: no error")
	}
}

func TestChartErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := handSweep("part")
	b, _ := plan.ParseBudget("5bpw")
	sol, err := plan.Solve(s, plan.SolveOptions{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	empty := &plan.Sweep{UnitKind: "part"}
	if _, err := Sensitivity(filepath.Join(dir, "e"), empty); !errors.Is(err, plan.ErrSweep) {
		t.Errorf("sensitivity of an empty sweep: %v", err)
	}
	if _, err := Front(ctx, empty, FrontOptions{}); !errors.Is(err, plan.ErrSweep) {
		t.Errorf("front of an empty sweep: %v", err)
	}
	if _, err := Pareto(ctx, filepath.Join(dir, "e"), empty, sol, ParetoOptions{}); !errors.Is(err, ErrForeign) {
		t.Errorf("pareto of an empty sweep: %v", err)
	}
	// Solutions from other sweeps: another model; the same model with
	// other measurements; another unit kind.
	other := handSweep("part")
	other.Model.Fingerprint = "cafe"
	remeasured := handSweep("part")
	for i := range remeasured.Measurements {
		remeasured.Measurements[i].DKL *= 1.5
	}
	for name, sw := range map[string]*plan.Sweep{"model": other, "measurements": remeasured, "unit kind": handSweep("layer")} {
		if _, err := Pareto(ctx, filepath.Join(dir, "f"), sw, sol, ParetoOptions{}); !errors.Is(err, ErrForeign) {
			t.Errorf("a solution of another sweep (%s): %v", name, err)
		}
	}
	if _, err := Pareto(ctx, filepath.Join(dir, "f"), s, nil, ParetoOptions{}); !errors.Is(err, ErrForeign) {
		t.Errorf("no solution: %v", err)
	}
	// A shard, a missing measurement, a bad value.
	shard := handSweep("part")
	shard.Shard = &plan.Shard{I: 0, N: 2}
	missing := handSweep("part")
	missing.Measurements = missing.Measurements[1:]
	nan := handSweep("part")
	nan.Measurements[4].DKL = math.NaN()
	for name, sw := range map[string]*plan.Sweep{"shard": shard, "incomplete": missing, "NaN": nan} {
		if _, err := Front(ctx, sw, FrontOptions{}); !errors.Is(err, plan.ErrSweep) {
			t.Errorf("front of a bad sweep (%s): %v", name, err)
		}
	}
	if _, err := Sensitivity(filepath.Join(dir, "n"), nan); !errors.Is(err, plan.ErrSweep) {
		t.Errorf("sensitivity with a NaN: %v", err)
	}
	unknown := handSweep("part")
	unknown.Measurements[0].Unit = "9.mlp"
	if _, err := Sensitivity(filepath.Join(dir, "u"), unknown); !errors.Is(err, plan.ErrSweep) {
		t.Errorf("sensitivity with an unknown unit: %v", err)
	}
	// One size for every plan: nothing to choose.
	flat := handSweep("part")
	flat.Candidates = flat.Candidates[:1]
	flat.Measurements = nil
	for _, m := range s.Measurements {
		if m.Candidate == flat.Candidates[0] {
			flat.Measurements = append(flat.Measurements, m)
		}
	}
	if _, err := Front(ctx, flat, FrontOptions{}); !errors.Is(err, plan.ErrBudget) {
		t.Errorf("front of a sweep of one candidate: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Front(cancelled, s, FrontOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "e.png")); err == nil {
		t.Error("a failed chart wrote a file")
	}
}
