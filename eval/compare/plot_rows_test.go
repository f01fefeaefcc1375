package compare

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"forge/eval"
)

// near compares float64s to 1e-12 relative (sums of a few exact values).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestProfileRowsHand checks rowProfile on rows worked out by hand.
func TestProfileRowsHand(t *testing.T) {
	rows := [][]float32{{1, 2, 3, 4}, {3, 4, 5, 6}, {2}}
	// Windows of 2. Window 0, positions 0–1: row means 1.5, 3.5, 2 → mean
	// 7/3, deviations −5/6, 7/6, −1/3, Σ² = 13/6, se = √(13/6 / (3·2)).
	// Window 1, positions 2–3: rows 0 and 1 only, 3.5 and 5.5 → mean 4.5,
	// se = √(2 / 2) = 1. Over every position: 30/9.
	p := profileRows(rows, 2)
	se0 := math.Sqrt(13.0 / 6 / 6)
	want := rowProfile{X: []float64{0.5, 2.5}, Mean: []float64{7.0 / 3, 4.5},
		Lo: []float64{7.0/3 - se0, 3.5}, Hi: []float64{7.0/3 + se0, 5.5}, Rows: []int{3, 2}, All: 30.0 / 9}
	if !nearAll(p.X, want.X) || !nearAll(p.Mean, want.Mean) || !nearAll(p.Lo, want.Lo) || !nearAll(p.Hi, want.Hi) ||
		!slices.Equal(p.Rows, want.Rows) || !near(p.All, want.All) {
		t.Errorf("w=2: got %+v, want %+v", p, want)
	}
	// Each position: position 0 has 1, 3, 2 → mean 2, se = √(2/6); position
	// 3 has 4 and 6 → mean 5, se 1.
	p = profileRows(rows, 1)
	if len(p.X) != 4 || p.X[3] != 3 || !near(p.Mean[0], 2) || !near(p.Hi[0]-p.Mean[0], math.Sqrt(2.0/6)) ||
		!near(p.Mean[3], 5) || !near(p.Lo[3], 4) || !near(p.Hi[3], 6) || p.Rows[3] != 2 {
		t.Errorf("w=1: got %+v", p)
	}
	// One row: no spread across rows, so no band.
	p = profileRows([][]float32{{2, 4}}, 1)
	if !nearAll(p.Lo, []float64{2, 4}) || !nearAll(p.Hi, []float64{2, 4}) {
		t.Errorf("one row: got %+v", p)
	}
	// A window the longest row only partly fills: rows of 3, windows of 2;
	// window 1 holds position 2 alone, its centre is 2.
	p = profileRows([][]float32{{1, 1, 4}, {1, 1, 8}}, 2)
	if !nearAll(p.X, []float64{0.5, 2}) || !nearAll(p.Mean, []float64{1, 6}) || !nearAll(p.Hi, []float64{1, 8}) {
		t.Errorf("partial window: got %+v", p)
	}
}

// TestRowPanels: a run's KL is cut at its row boundaries and grouped by
// source, panels in order of first appearance across runs; a run without
// sources is one group of all rows; repeated file names keep their paths.
func TestRowPanels(t *testing.T) {
	a := &Run{Name: "a", KL: []float32{1, 2, 10, 20, 30, 7},
		RowPositions: []int{2, 3, 1}, Sources: []eval.RowSource{{Path: "d/code.txt", Rows: 2}, {Path: "d/prose.txt", Rows: 1}}}
	b := &Run{Name: "b", KL: []float32{1, 1, 1, 5}, RowPositions: []int{3, 1}}
	c := &Run{Name: "c", KL: []float32{1, 2}, RowPositions: []int{1, 1},
		Sources: []eval.RowSource{{Path: "x/prose.txt", Rows: 1}, {Path: "d/prose.txt", Rows: 1}}}
	g := groupRows(a)
	if len(g) != 2 || g[0].label != "code.txt" || len(g[0].rows) != 2 || !slices.Equal(g[0].rows[1], []float32{10, 20, 30}) ||
		g[1].label != "prose.txt" || !slices.Equal(g[1].rows[0], []float32{7}) {
		t.Errorf("groups of a: %+v", g)
	}
	if g := groupRows(c); g[0].label != "x/prose.txt" || g[1].label != "d/prose.txt" {
		t.Errorf("groups of c: %+v", g)
	}
	panels := rowPanels([]*Run{a, b}, 1)
	if len(panels) != 3 || panels[0].label != "code.txt" || panels[1].label != "prose.txt" || panels[2].label != allRows {
		t.Fatalf("panels %v", panels)
	}
	code, all := panels[0], panels[2]
	// code.txt: rows {1, 2} and {10, 20, 30}: position 0 mean 5.5, position
	// 2 only 30; 2 to 3 positions.
	if !slices.Equal(code.runs, []int{0}) || code.minLen != 2 || code.maxLen != 3 || code.rows[0] != 2 ||
		!nearAll(code.profiles[0].Mean, []float64{5.5, 11, 30}) {
		t.Errorf("code panel %+v", code)
	}
	if !slices.Equal(all.runs, []int{1}) || !nearAll(all.profiles[0].Mean, []float64{3, 1, 1}) || !near(all.profiles[0].All, 2) {
		t.Errorf("all-rows panel %+v", all)
	}
	if w, longest := rowWindow([]*Run{a, {RowPositions: []int{129}}}); w != 3 || longest != 129 {
		t.Errorf("rowWindow: %d, %d; want ⌈129/64⌉ = 3", w, longest)
	}
}

// TestComparePositionNotes: without row boundaries (reports of an older
// forge eval) the position plot runs along the trace and a note says so;
// with some runs lacking them, those are left out by name.
func TestComparePositionNotes(t *testing.T) {
	old := slices.Clone(threeRuns[:2])
	for i := range old {
		old[i].rows = 0
	}
	dir, reports, kls, _ := writeRuns(t, old, true)
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	files, notes, err := c.Plot(dir)
	// 3 figures (abl_mlp is an ablation) × PNG and SVG.
	if err != nil || len(files) != 6 || len(notes) != 1 || !strings.Contains(notes[0], "no row boundaries") ||
		!strings.Contains(notes[0], "along the whole trace") {
		t.Errorf("no rows: files %q, notes %q, %v", files, notes, err)
	}
	mixed := []synthRun{threeRuns[0], old[1]}
	dir, reports, kls, _ = writeRuns(t, mixed, true)
	if c, err = Load(reports, kls); err != nil {
		t.Fatal(err)
	}
	files, notes, err = c.Plot(dir)
	if err != nil || len(files) != 6 || len(notes) != 1 || !strings.Contains(notes[0], "left out abl_mlp") {
		t.Errorf("mixed: files %q, notes %q, %v", files, notes, err)
	}
}

// TestCompareRowLayoutRefused: row_positions that do not add up to
// n_positions, or sources that do not add up to the rows, are refused
// naming the report.
func TestCompareRowLayoutRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(map[string]any)
		wants string
	}{
		{"sum", func(f map[string]any) { f["row_positions"] = []int{100, 100} }, "add up to 200"},
		{"zero", func(f map[string]any) { f["row_positions"] = slices.Repeat([]int{0, 500}, 8) }, "want ≥ 1"},
		{"sources", func(f map[string]any) { f["sources"] = []eval.RowSource{{Path: "a.txt", Rows: 3}} }, "sources hold 3 rows, not 16"},
		{"orphan sources", func(f map[string]any) { delete(f, "row_positions") }, "sources without row_positions"},
	} {
		dir := t.TempDir()
		report, _, fields := writeSynth(t, dir, threeRuns[0], 1, false)
		c.edit(fields)
		writeJSON(t, report, fields)
		_, err := Load([]string{report}, nil)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), report) || !strings.Contains(err.Error(), c.wants) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
