package compare

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// checkFigureFiles checks that files are stem.png, a PNG of w×h pixels
// (w = 0: at least the default width), and stem.svg, valid SVG with every
// string of want in it.
func checkFigureFiles(t *testing.T, stem string, files []string, w int, want ...string) {
	t.Helper()
	if len(files) != 2 || files[0] != stem+".png" || files[1] != stem+".svg" {
		t.Fatalf("files %q", files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	dw, dh := int(plotWidth/vg.Inch*plotDPI), int(plotHeight/vg.Inch*plotDPI)
	if b := img.Bounds(); b.Dy() != dh || (w != 0 && b.Dx() != w) || b.Dx() < dw {
		t.Errorf("%s: %d×%d pixels, want %d×%d", files[0], b.Dx(), b.Dy(), max(w, dw), dh)
	}
	svg, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, files[1], svg)
	for _, s := range want {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("%s: no %q", files[1], s)
		}
	}
}

// TestFigures draws each figure, including values ≤ 0 (drawn at the axis
// floor; a log axis would otherwise fail) and bars reaching below 0.
func TestFigures(t *testing.T) {
	dir := t.TempDir()
	dw := int(plotWidth / vg.Inch * plotDPI)
	sens := &SensitivityFigure{Title: "sensitivity", XLabel: "layer", YLabel: "ΔKL",
		Ticks: []Tick{{0, "0"}, {1, "1"}, {2, "2"}, {3, "head"}},
		Series: []Series{
			{Label: "mlp, LUT2", X: []float64{2, 0, 1}, Y: []float64{0.03, 0.05, 0.04}, SE: []float64{0.003, 0.01, 0.05}},
			{Label: "mlp, LUT4", Shape: 1, X: []float64{0, 1, 2}, Y: []float64{0.005, 0, -0.001}, SE: []float64{0.001, 0.001, 0.002}},
			{Label: "head, LUT2", Color: 1, X: []float64{3}, Y: []float64{0.02}},
		}}
	files, err := sens.Write(filepath.Join(dir, "sens"))
	if err != nil {
		t.Fatal(err)
	}
	checkFigureFiles(t, filepath.Join(dir, "sens"), files, 0, "mlp, LUT2", "mlp, LUT4", "head, LUT2", "≤ 0 at the bottom")

	pareto := &ParetoFigure{Title: "front", XLabel: "bpw", YLabel: "ΔKL", FrontLabel: "the front", PointsLabel: "uniform",
		Front:    []Mark{{X: 2, Y: 0.3}, {X: 3, Y: 0.1}, {X: 4.5, Y: 0.01}, {X: 16, Y: 0}},
		Points:   []Mark{{Label: "LUT2", X: 2, Y: 0.3, SE: 0.01}, {Label: "bf16", X: 16, Y: 0}},
		Chosen:   &Mark{Label: "chosen", X: 3, Y: 0.1, SE: 0.02},
		Measured: &Mark{Label: "measured", X: 3, Y: 0.12, SE: 0.2}}
	files, err = pareto.Write(filepath.Join(dir, "pareto"))
	if err != nil {
		t.Fatal(err)
	}
	checkFigureFiles(t, filepath.Join(dir, "pareto"), files, dw, "the front", "uniform", "LUT2", "bf16", "chosen", "measured")

	pred := &PredictionFigure{Title: "gate", Pairs: []Pair{
		{Label: "2.6bpw", Predicted: 0.05, Measured: 0.06, SE: 0.004, PredictedSE: 0.003},
		{Label: "4bpw", Predicted: 0.004, Measured: 0.0035, SE: 0.005},
		{Label: "bf16", Predicted: 0, Measured: 1e-6}}}
	files, err = pred.Write(filepath.Join(dir, "pred"))
	if err != nil {
		t.Fatal(err)
	}
	checkFigureFiles(t, filepath.Join(dir, "pred"), files, dw, "2.6bpw", "4bpw", "bf16", "measured = predicted", "predicted KL", "≤ 0 at the left")
	// The same figure, the same bytes.
	again, err := pred.Write(filepath.Join(dir, "again"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		a, _ := os.ReadFile(files[i])
		b, _ := os.ReadFile(again[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ", files[i], again[i])
		}
	}
}

// figure is what every figure type implements.
type figure interface {
	Write(stem string) ([]string, error)
}

var (
	_ figure = (*SensitivityFigure)(nil)
	_ figure = (*ParetoFigure)(nil)
	_ figure = (*PredictionFigure)(nil)
)

func TestFigureErrors(t *testing.T) {
	dir := t.TempDir()
	stem := filepath.Join(dir, "bad")
	nan := math.NaN()
	cases := []struct {
		name string
		fig  figure
	}{
		{"no series", &SensitivityFigure{}},
		{"uneven series", &SensitivityFigure{Series: []Series{{Label: "a", X: []float64{0, 1}, Y: []float64{1}}}}},
		{"uneven se", &SensitivityFigure{Series: []Series{{Label: "a", X: []float64{0}, Y: []float64{1}, SE: []float64{1, 2}}}}},
		{"NaN in a series", &SensitivityFigure{Series: []Series{{Label: "a", X: []float64{0}, Y: []float64{nan}}}}},
		{"no front", &ParetoFigure{Points: []Mark{{X: 1, Y: 1}}}},
		{"front out of order", &ParetoFigure{Front: []Mark{{X: 2, Y: 1}, {X: 1, Y: 0.5}}}},
		{"infinite mark", &ParetoFigure{Front: []Mark{{X: 1, Y: 1}}, Chosen: &Mark{X: math.Inf(1), Y: 1}}},
		{"no pairs", &PredictionFigure{}},
		{"NaN pair", &PredictionFigure{Pairs: []Pair{{Label: "x", Predicted: 1, Measured: nan}}}},
	}
	for _, c := range cases {
		if _, err := c.fig.Write(stem); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), stem) {
			t.Errorf("%s: %v, want an error naming %s wrapping ErrInput", c.name, err, stem)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed figures wrote %d files", len(ents))
	}
}

// TestStepTicks: 1, 2 or 5 × 10^k between labelled ticks, 5 to 10 of
// them, with a minor tick halfway.
func TestStepTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		labels []string
	}{
		{1.5, 17, []string{"2", "4", "6", "8", "10", "12", "14", "16"}},
		{2.1, 3.3, []string{"2.2", "2.4", "2.6", "2.8", "3.0", "3.2"}},
		{0, 100, []string{"0", "10", "20", "30", "40", "50", "60", "70", "80", "90", "100"}},
	}
	for _, c := range cases {
		var got []string
		for _, tk := range (stepTicks{}).Ticks(c.lo, c.hi) {
			if tk.Value < c.lo || tk.Value > c.hi*(1+1e-12) {
				t.Errorf("[%g, %g]: tick %g outside", c.lo, c.hi, tk.Value)
			}
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.labels, " ") {
			t.Errorf("[%g, %g]: labels %q, want %q", c.lo, c.hi, got, c.labels)
		}
	}
}
