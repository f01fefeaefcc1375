package chart

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"forge/eval/compare"
	"forge/plan"
)

// Sensitivity draws the sweep's per-unit ΔKL by layer to stem.png and
// stem.svg and returns the two paths: for each measurement the point
// (unit's first layer, Measurement.DKL ± SE) in nats on a log axis, one
// series per part and candidate (see the package doc); a series whose
// ΔKL is ≤ 0 at every unit (the unquantized candidate) is left out and
// the title says so. A shard draws what it measured. An empty sweep and a
// measurement of a unit or candidate the sweep does not list, or with a
// value that is not finite, are errors wrapping plan.ErrSweep.
func Sensitivity(stem string, s *plan.Sweep) ([]string, error) {
	fig, err := sensitivityFigure(s)
	if err != nil {
		return nil, fmt.Errorf("chart: sensitivity %s: %w", stem, err)
	}
	return fig.Write(stem)
}

// seriesKey is a series of the sensitivity figure: a part ("" for layer
// and band units) and a candidate's index.
type seriesKey struct {
	part string
	cand int
}

func sensitivityFigure(s *plan.Sweep) (*compare.SensitivityFigure, error) {
	series, parts, err := collectSeries(s)
	if err != nil {
		return nil, err
	}
	// Colours: for layer and band units ("" part) their candidate's
	// index; after those, one per named part.
	color := map[string]int{}
	for _, p := range parts {
		if p != "" {
			color[p] = len(color)
			if slices.Contains(parts, "") {
				color[p] += len(s.Candidates)
			}
		}
	}
	colorOf := func(k seriesKey) int {
		if k.part == "" {
			return k.cand
		}
		return color[k.part]
	}
	keys := slices.SortedFunc(maps.Keys(series), func(a, b seriesKey) int {
		return cmp.Or(cmp.Compare(colorOf(a), colorOf(b)), cmp.Compare(a.cand, b.cand))
	})
	fig := &compare.SensitivityFigure{YLabel: "ΔKL, nats (log scale; bars ± 1 s.e.)", XLabel: "layer"}
	flat := map[int][]string{} // candidate → the parts of its series left out
	for _, k := range keys {
		sr := series[k]
		sr.Color = colorOf(k)
		if slices.Max(sr.Y) > 0 {
			fig.Series = append(fig.Series, *sr)
		} else {
			flat[k.cand] = append(flat[k.cand], cmp.Or(k.part, "layers"))
		}
	}
	if len(fig.Series) == 0 {
		return nil, fmt.Errorf("%w: no measurement has a ΔKL above 0: nothing to draw on a log axis", plan.ErrSweep)
	}
	layers, head := layerCount(s.Units)
	if strings.HasPrefix(s.UnitKind, "band:") {
		fig.XLabel = "band of layers"
	}
	if head {
		fig.XLabel += " (the head last)"
	}
	fig.Ticks = layerTicks(s.UnitKind, s.Units, layers, head)
	fig.Title = sensitivityTitle(s, flatNote(s.Candidates, flat, len(parts)))
	return fig, nil
}

// collectSeries groups the measurements of s into series by part and
// candidate, and lists the parts in order of first appearance.
func collectSeries(s *plan.Sweep) (map[seriesKey]*compare.Series, []string, error) {
	if len(s.Units) == 0 || len(s.Candidates) == 0 || len(s.Measurements) == 0 {
		return nil, nil, fmt.Errorf("%w: no units, candidates or measurements to draw", plan.ErrSweep)
	}
	unit := map[string]*plan.Unit{}
	for i := range s.Units {
		unit[s.Units[i].Key] = &s.Units[i]
	}
	cand := map[plan.Candidate]int{}
	for j, c := range s.Candidates {
		cand[c] = j
	}
	series := map[seriesKey]*compare.Series{}
	var parts []string
	for _, m := range s.Measurements {
		u, ok1 := unit[m.Unit]
		j, ok2 := cand[m.Candidate]
		switch {
		case !ok1 || !ok2:
			return nil, nil, fmt.Errorf("%w: measurement of unknown unit %q or candidate %q", plan.ErrSweep, m.Unit, m.Candidate)
		case !isFinite(m.DKL) || !isFinite(m.SE):
			return nil, nil, fmt.Errorf("%w: unit %s, %s: a value is not finite", plan.ErrSweep, m.Unit, m.Candidate)
		}
		k := seriesKey{unitPart(u.Key), j}
		sr := series[k]
		if sr == nil {
			if !slices.Contains(parts, k.part) {
				parts = append(parts, k.part)
			}
			sr = &compare.Series{Label: m.Candidate.String(), Shape: j}
			if k.part != "" {
				sr.Label = k.part + ", " + sr.Label
			}
			series[k] = sr
		}
		sr.X, sr.Y, sr.SE = append(sr.X, float64(u.Layer)), append(sr.Y, m.DKL), append(sr.SE, m.SE)
	}
	return series, parts, nil
}

// flatNote lists the series left out by candidate: the candidate alone
// when every one of its n series is, else "candidate (part, part)".
func flatNote(cands []plan.Candidate, flat map[int][]string, n int) []string {
	var out []string
	for j, c := range cands {
		ps := flat[j]
		switch {
		case len(ps) == 0:
		case len(ps) == n:
			out = append(out, c.String())
		default:
			out = append(out, c.String()+" ("+strings.Join(ps, ", ")+")")
		}
	}
	return out
}

// sensitivityTitle names the model, the trace's rows and the unit kind,
// and the series left out.
func sensitivityTitle(s *plan.Sweep, flat []string) string {
	t := fmt.Sprintf("ΔKL of quantizing one unit alone, by layer: %s\n%s; %s units; the reference's own KL %s",
		baseName(s.Model.Path, "the model"), traceRows(s), s.UnitKind, fmtKL(s.Base.KL))
	if s.Shard != nil {
		t += fmt.Sprintf("; shard %s of the measurements", s.Shard)
	}
	if len(flat) > 0 {
		t += "\nnot drawn (ΔKL ≤ 0 at every unit): " + strings.Join(flat, "; ")
	}
	return t
}

// traceRows names the trace and the rows a sweep scored.
func traceRows(s *plan.Sweep) string {
	return fmt.Sprintf("trace %s, its first %d rows (%d positions)", baseName(s.Trace.Path, "?"), s.Trace.Rows, s.Trace.Positions)
}

// unitPart is the part a unit key names: the name after "LAYER." (mlp,
// mixer, attn, kv, or a matrix's role), "head", or "" for a layer ("3")
// or a band ("0-7").
func unitPart(key string) string {
	if key == "head" {
		return key
	}
	if _, part, ok := strings.Cut(key, "."); ok {
		return part
	}
	return ""
}

// layerCount is the number of decoder layers the units cover (the head's
// Layer when it is a unit, else one past the last layer of any unit) and
// whether the head is a unit.
func layerCount(us []plan.Unit) (n int, head bool) {
	for _, u := range us {
		if u.Key == "head" {
			return u.Layer, true
		}
		last := u.Layer
		if _, hi, ok := strings.Cut(u.Key, "-"); ok {
			if v, err := strconv.Atoi(hi); err == nil {
				last = v
			}
		}
		n = max(n, last+1)
	}
	return n, false
}

// layerTicks marks, for units of kind, every layer (labelled every one up
// to 32 layers, else every ⌈n/32⌉-th) and "head" at n; for layer and
// band units each unit's key at its first layer.
func layerTicks(kind string, us []plan.Unit, n int, head bool) []compare.Tick {
	var ts []compare.Tick
	if kind == "layer" || strings.HasPrefix(kind, "band:") {
		for _, u := range us {
			ts = append(ts, compare.Tick{Value: float64(u.Layer), Label: u.Key})
		}
		return ts
	}
	step := max(1, int(math.Ceil(float64(n)/32)))
	for l := range n {
		t := compare.Tick{Value: float64(l)}
		if l%step == 0 {
			t.Label = strconv.Itoa(l)
		}
		ts = append(ts, t)
	}
	if head {
		ts = append(ts, compare.Tick{Value: float64(n), Label: "head"})
	}
	return ts
}

func baseName(path, none string) string {
	if path == "" {
		return none
	}
	return filepath.Base(path)
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fmtKL writes a KL in nats: four decimals, or three significant digits
// below 1e-3.
func fmtKL(x float64) string {
	if x != 0 && math.Abs(x) < 1e-3 {
		return fmt.Sprintf("%.2e", x)
	}
	return fmt.Sprintf("%.4f", x)
}
