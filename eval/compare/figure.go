package compare

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The figures below take plain numbers, not reports: package plan/chart
// draws a sweep and the plans chosen from it with them, and a check of a
// plan's prediction against the bundle's measurement can draw its pairs.
// Each Write renders one figure to STEM.png and STEM.svg (fonts embedded)
// through a synced temporary file renamed into place, and returns the two
// paths; the same figure writes the same bytes. Values are drawn on log
// axes: a value ≤ 0 (a ΔKL that measured as no loss, or as a gain within
// its noise) is drawn at the bottom edge, and the axis label says so.

// Tick is a labelled position on an axis.
type Tick struct {
	Value float64
	Label string // "" for an unlabelled minor tick
}

// Series is one series of a SensitivityFigure: values Y[i] ± SE[i] at
// positions X[i] (SE may be nil: no bars).
type Series struct {
	Label string
	Color int // palette index: the series of one part share a colour
	Shape int // marker and dash index: the series of one candidate share them
	X     []float64
	Y     []float64
	SE    []float64
}

// SensitivityFigure draws series of values on a log axis against
// positions, each as markers joined by a line with ± SE bars, the legend
// beside the plot: ΔKL per layer, one series per part and candidate.
type SensitivityFigure struct {
	Title, XLabel, YLabel string
	Ticks                 []Tick // the x axis's ticks; nil: automatic
	Series                []Series
}

// Mark is a labelled point with an optional ± SE bar on its y value.
type Mark struct {
	Label string
	X, Y  float64
	SE    float64
}

// ParetoFigure draws a front (the least y reached at each x: the least
// ΔKL of any plan of that size) as a staircase that holds each point's
// value up to the next, with reference points (the uniform plans), a
// chosen point and a measured one marked, on a log y axis.
type ParetoFigure struct {
	Title, XLabel, YLabel string
	Front                 []Mark // in increasing X; labels unused
	FrontLabel            string // the front's legend entry
	Points                []Mark // each drawn with its label
	PointsLabel           string // their legend entry
	Chosen                *Mark  // optional: highlighted, with its label in the legend
	Measured              *Mark  // optional: highlighted, with its label in the legend
}

// Pair is a predicted value and the measurement that checks it: a plan's
// predicted KL and the KL measured on its bundle.
type Pair struct {
	Label     string
	Predicted float64
	Measured  float64
	SE        float64 // the measurement's standard error (a vertical bar); 0: none
	// PredictedSE is the prediction's standard error (a horizontal bar);
	// 0: none.
	PredictedSE float64
}

// PredictionFigure draws measured (y) against predicted (x) values on
// log–log axes of the same range, with the line y = x: points above it
// measured worse than predicted.
type PredictionFigure struct {
	Title string
	// XLabel and YLabel default to "predicted KL, nats" and "measured
	// KL, nats".
	XLabel, YLabel string
	Pairs          []Pair
}

// shapes are the markers of the series' Shape index, cycled.
var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{},
	draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// dashes are the line patterns of the series' Shape index, cycled.
var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}

// logAxis maps values to a log axis drawn as a linear axis of log10 v
// (gonum's log scale places a long axis label by the linear midpoint of
// the range, which squeezes the plot): Min and Max are the axis's range
// in log10 units, floor the smallest value drawn (values below it, ≤ 0
// among them when clamped, are drawn at it).
type logAxis struct {
	Min, Max float64
	floor    float64
	clamped  bool
}

// newLogAxis spans the positive values of vals and of lo (the lower ends
// of bars, ignored where ≤ 0); a value ≤ 0 among vals sets clamped.
func newLogAxis(vals, lo []float64) logAxis {
	small, big := math.Inf(1), 0.0
	var a logAxis
	for _, v := range vals {
		if v <= 0 {
			a.clamped = true
			continue
		}
		small, big = math.Min(small, v), math.Max(big, v)
	}
	for _, v := range lo {
		if v > 0 {
			small = math.Min(small, v)
		}
	}
	if math.IsInf(small, 1) { // nothing positive
		small, big = 1e-5, 1e-5
	}
	a.floor = small
	if a.clamped {
		a.floor = small / 4
	}
	a.Min, a.Max = math.Log10(a.floor/1.5), math.Log10(big*3)
	return a
}

// at is where v is drawn: log10 v, or log10 of the floor when v is below it.
func (a logAxis) at(v float64) float64 { return math.Log10(math.Max(v, a.floor)) }

// bars are the bars y[i] ± se[i] at pts (the y values as drawn, a.at),
// cut at the axis floor.
func (a logAxis) bars(pts plotter.XYs, y, se []float64, c color.Color) (*plotter.YErrorBars, error) {
	errs := make(plotter.YErrors, len(pts))
	for i, p := range pts {
		errs[i].Low, errs[i].High = p.Y-a.at(y[i]-se[i]), a.at(y[i]+se[i])-p.Y
	}
	b, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	b.Color, b.CapWidth = c, vg.Points(3)
	return b, nil
}

// apply sets ax to a's range and decade ticks, labelled label (noting
// that values ≤ 0 are drawn at the edge, when some are).
func (a logAxis) apply(ax *plot.Axis, label, edge string) {
	ax.Tick.Marker = log10Ticks{}
	ax.Min, ax.Max = a.Min, a.Max
	ax.Label.Text = label
	if a.clamped {
		ax.Label.Text += " (≤ 0 at the " + edge + ")"
	}
}

// log10Ticks are decadeTicks on an axis of log10 v.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := decadeTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// finite returns an error wrapping ErrInput if any of vs is NaN or infinite.
func finite(what string, vs ...float64) error {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("compare: %s: a value is not finite: %w", what, ErrInput)
		}
	}
	return nil
}

// writeFigure saves r as stem.png and stem.svg.
func writeFigure(stem string, r plotRender) ([]string, error) {
	return savePlot(filepath.Dir(stem), filepath.Base(stem), r)
}

// Write draws f to stem.png and stem.svg. An empty figure, series of
// unequal lengths and values that are not finite are errors wrapping
// ErrInput.
func (f *SensitivityFigure) Write(stem string) ([]string, error) {
	if err := f.check(stem); err != nil {
		return nil, err
	}
	var ys, los []float64
	for _, s := range f.Series {
		ys = append(ys, s.Y...)
		for i, se := range s.SE {
			los = append(los, s.Y[i]-se)
			ys = append(ys, s.Y[i]+se)
		}
	}
	ax := newLogAxis(ys, los)
	p := plot.New()
	p.Title.Text, p.Title.Padding = f.Title, vg.Points(6)
	p.X.Label.Text = f.XLabel
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, s := range f.Series {
		idx := make([]int, len(s.X))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.X[a], s.X[b]) })
		pts := make(plotter.XYs, len(idx))
		var y, se []float64
		for k, i := range idx {
			pts[k] = plotter.XY{X: s.X[i], Y: ax.at(s.Y[i])}
			xlo, xhi = math.Min(xlo, s.X[i]), math.Max(xhi, s.X[i])
			if s.SE != nil {
				y, se = append(y, s.Y[i]), append(se, s.SE[i])
			}
		}
		line, marks, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", stem, err)
		}
		c := runColors[s.Color%len(runColors)]
		line.Color, line.Width, line.Dashes = c, vg.Points(1.2), dashes[s.Shape%len(dashes)]
		marks.Color, marks.Shape, marks.Radius = c, shapes[s.Shape%len(shapes)], vg.Points(3)
		p.Add(line, marks)
		if se != nil {
			b, err := ax.bars(pts, y, se, c)
			if err != nil {
				return nil, fmt.Errorf("compare: %s: %w", stem, err)
			}
			p.Add(b)
		}
		leg.Add(s.Label, line, marks)
	}
	ax.apply(&p.Y, f.YLabel, "bottom")
	p.X.Min, p.X.Max = xlo-0.5, xhi+0.5
	if f.Ticks != nil {
		p.X.Tick.Marker = plot.ConstantTicks(toTicks(f.Ticks))
	}
	return writeFigure(stem, beside(p, leg, f.Series))
}

// check returns an error wrapping ErrInput for no series, series of
// unequal lengths and values that are not finite.
func (f *SensitivityFigure) check(stem string) error {
	if len(f.Series) == 0 {
		return fmt.Errorf("compare: %s: no series to draw: %w", stem, ErrInput)
	}
	for _, s := range f.Series {
		if len(s.X) == 0 || len(s.Y) != len(s.X) || (s.SE != nil && len(s.SE) != len(s.X)) {
			return fmt.Errorf("compare: %s: series %q has %d x, %d y and %d se values: %w", stem, s.Label, len(s.X), len(s.Y), len(s.SE), ErrInput)
		}
		if err := finite(stem+": series "+s.Label, slices.Concat(s.X, s.Y, s.SE)...); err != nil {
			return err
		}
	}
	return nil
}

// beside lays p out with its legend in a column on the right, as wide as
// the longest entry.
func beside(p *plot.Plot, leg plot.Legend, series []Series) plotRender {
	var w vg.Length
	for _, s := range series {
		w = max(w, leg.TextStyle.Width(s.Label))
	}
	w += leg.ThumbnailWidth + 3*leg.TextStyle.Width(" ")
	leg.Left, leg.Top = true, true
	top := p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + vg.Points(4)
	return plotRender{plotWidth + w, plotHeight, func(c draw.Canvas) {
		p.Draw(draw.Crop(c, 0, -w, 0, 0))
		leg.Draw(draw.Crop(c, c.Max.X-c.Min.X-w+vg.Points(6), 0, 0, -top))
	}}
}

// stepTicks marks a linear axis every 1, 2 or 5 × 10^k, whichever gives
// 5 to 10 labelled ticks, with an unlabelled tick halfway between.
type stepTicks struct{}

// Ticks implements plot.Ticker.
func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	decade := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	step := decade
	for _, k := range []float64{1, 2, 5, 10} {
		if step = k * decade; (hi-lo)/step <= 10 {
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi*(1+1e-12); i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(math.Round(v/step)*step, 'f', max(0, int(-math.Floor(math.Log10(step)))), 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func toTicks(ts []Tick) []plot.Tick {
	out := make([]plot.Tick, len(ts))
	for i, t := range ts {
		out[i] = plot.Tick{Value: t.Value, Label: t.Label}
	}
	return out
}

// Write draws f to stem.png and stem.svg. A figure without a front,
// front points out of x order and values that are not finite are errors
// wrapping ErrInput.
func (f *ParetoFigure) Write(stem string) ([]string, error) {
	marks, err := f.check(stem)
	if err != nil {
		return nil, err
	}
	var ys, los []float64
	for _, m := range marks {
		ys, los = append(ys, m.Y, m.Y+m.SE), append(los, m.Y-m.SE)
	}
	ax := newLogAxis(ys, los)
	p := plot.New()
	p.Title.Text, p.Title.Padding = f.Title, vg.Points(6)
	p.X.Label.Text = f.XLabel
	p.Add(plotter.NewGrid())
	pts := make(plotter.XYs, len(f.Front))
	for i, m := range f.Front {
		pts[i] = plotter.XY{X: m.X, Y: ax.at(m.Y)}
	}
	line, dots, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", stem, err)
	}
	line.StepStyle, line.Color, line.Width = plotter.PostStep, runColors[0], vg.Points(1.5)
	dots.Color, dots.Radius = runColors[0], vg.Points(2)
	p.Add(line, dots)
	p.Legend.Add(f.FrontLabel, line, dots)
	// The uniform plans grey and labelled; the measurement lies at the
	// chosen plan's x: a ring around it.
	for _, set := range []struct {
		ms       []Mark
		legend   string
		c        color.Color
		glyph    draw.GlyphDrawer
		r        float64
		labelled bool
	}{{f.Points, f.PointsLabel, color.Gray{Y: 0x55}, draw.SquareGlyph{}, 3.5, true},
		{marksOf(f.Chosen), "", runColors[1], draw.PyramidGlyph{}, 5, false},
		{marksOf(f.Measured), "", runColors[2], draw.RingGlyph{}, 7, false}} {
		if len(set.ms) == 0 {
			continue
		}
		if err := addMarks(p, ax, set.ms, set.c, set.glyph, set.r, set.labelled); err != nil {
			return nil, fmt.Errorf("compare: %s: %w", stem, err)
		}
		p.Legend.Add(cmp.Or(set.legend, set.ms[0].Label), legendGlyph(set.c, set.glyph, min(set.r, 4.5)))
	}
	ax.apply(&p.Y, f.YLabel, "bottom")
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, m := range marks {
		xlo, xhi = math.Min(xlo, m.X), math.Max(xhi, m.X)
	}
	pad := math.Max((xhi-xlo)*0.06, 0.1)
	p.X.Min, p.X.Max = xlo-pad, xhi+2*pad // room on the right for the labels
	p.X.Tick.Marker = stepTicks{}
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(4)
	return writeFigure(stem, single(p))
}

// check returns every mark of f after checking them.
func (f *ParetoFigure) check(stem string) ([]Mark, error) {
	if len(f.Front) == 0 {
		return nil, fmt.Errorf("compare: %s: no front to draw: %w", stem, ErrInput)
	}
	for i := 1; i < len(f.Front); i++ {
		if f.Front[i].X < f.Front[i-1].X {
			return nil, fmt.Errorf("compare: %s: the front is not in increasing x: %w", stem, ErrInput)
		}
	}
	marks := slices.Concat(f.Front, f.Points, marksOf(f.Chosen), marksOf(f.Measured))
	for _, m := range marks {
		if err := finite(stem+": "+m.Label, m.X, m.Y, m.SE); err != nil {
			return nil, err
		}
	}
	return marks, nil
}

// marksOf is the mark m points to, or none.
func marksOf(m *Mark) []Mark {
	if m == nil {
		return nil
	}
	return []Mark{*m}
}

// addMarks draws ms as glyphs of colour c and radius r points, with ± SE
// bars where SE > 0 and, with labelled, each mark's label beside it.
func addMarks(p *plot.Plot, ax logAxis, ms []Mark, c color.Color, glyph draw.GlyphDrawer, r float64, labelled bool) error {
	pts := make(plotter.XYs, len(ms))
	y, se := make([]float64, len(ms)), make([]float64, len(ms))
	labels := make([]string, len(ms))
	anySE := false
	for i, m := range ms {
		pts[i], y[i], se[i], labels[i] = plotter.XY{X: m.X, Y: ax.at(m.Y)}, m.Y, m.SE, m.Label
		anySE = anySE || m.SE > 0
	}
	if anySE {
		b, err := ax.bars(pts, y, se, c)
		if err != nil {
			return err
		}
		p.Add(b)
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Color, s.Shape, s.Radius = c, glyph, vg.Points(r)
	p.Add(s)
	if !labelled {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = text.YCenter
		l.TextStyle[i].Font.Size = vg.Points(8)
	}
	l.Offset = vg.Point{X: vg.Points(r + 3)}
	p.Add(l)
	return nil
}

// legendGlyph is a legend thumbnail of one glyph.
func legendGlyph(c color.Color, glyph draw.GlyphDrawer, r float64) plot.Thumbnailer {
	return glyphThumb{draw.GlyphStyle{Color: c, Shape: glyph, Radius: vg.Points(r)}}
}

type glyphThumb struct{ style draw.GlyphStyle }

// Thumbnail implements plot.Thumbnailer.
func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.style, c.Center())
}

// Write draws f to stem.png and stem.svg. No pairs, and values that are
// not finite, are errors wrapping ErrInput.
func (f *PredictionFigure) Write(stem string) ([]string, error) {
	if len(f.Pairs) == 0 {
		return nil, fmt.Errorf("compare: %s: no predictions to draw: %w", stem, ErrInput)
	}
	var vals, los []float64
	for _, q := range f.Pairs {
		if err := finite(stem+": "+q.Label, q.Predicted, q.Measured, q.SE, q.PredictedSE); err != nil {
			return nil, err
		}
		vals = append(vals, q.Predicted, q.Measured, q.Predicted+q.PredictedSE, q.Measured+q.SE)
		los = append(los, q.Predicted-q.PredictedSE, q.Measured-q.SE)
	}
	ax := newLogAxis(vals, los) // both axes: y = x is the diagonal
	p := plot.New()
	p.Title.Text, p.Title.Padding = f.Title, vg.Points(6)
	p.Add(plotter.NewGrid())
	diag, err := plotter.NewLine(plotter.XYs{{X: ax.Min, Y: ax.Min}, {X: ax.Max, Y: ax.Max}})
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", stem, err)
	}
	diag.Color, diag.Dashes = color.Gray{Y: 0x70}, []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add("measured = predicted", diag)
	marks := make([]Mark, len(f.Pairs))
	pts, xerrs := make(plotter.XYs, len(f.Pairs)), make(plotter.XErrors, len(f.Pairs))
	for i, q := range f.Pairs {
		marks[i] = Mark{Label: q.Label, X: ax.at(q.Predicted), Y: q.Measured, SE: q.SE}
		pts[i] = plotter.XY{X: marks[i].X, Y: ax.at(q.Measured)}
		xerrs[i].Low, xerrs[i].High = pts[i].X-ax.at(q.Predicted-q.PredictedSE), ax.at(q.Predicted+q.PredictedSE)-pts[i].X
	}
	xbars, err := plotter.NewXErrorBars(struct {
		plotter.XYer
		plotter.XErrorer
	}{pts, xerrs})
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", stem, err)
	}
	xbars.Color, xbars.CapWidth = runColors[0], vg.Points(3)
	p.Add(xbars)
	if err := addMarks(p, ax, marks, runColors[0], draw.CircleGlyph{}, 3.5, true); err != nil {
		return nil, fmt.Errorf("compare: %s: %w", stem, err)
	}
	p.Legend.Add("predicted, measured (± s.e.)", legendGlyph(runColors[0], draw.CircleGlyph{}, 3.5))
	ax.apply(&p.Y, cmp.Or(f.YLabel, "measured KL, nats (log scale)"), "bottom")
	ax.apply(&p.X, cmp.Or(f.XLabel, "predicted KL, nats (log scale)"), "left")
	// Bottom right: measured far below predicted is the rarer surprise.
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	return writeFigure(stem, single(p))
}
