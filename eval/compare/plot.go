package compare

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"forge/internal/durable"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot geometry: 9 × 5.5 inches, 1080 × 660 pixels in the PNGs.
const (
	plotWidth  = 9 * vg.Inch
	plotHeight = 5.5 * vg.Inch
	plotDPI    = 120
)

const (
	cdfMinKL     = 1e-4          // left end of the CDF's log-scaled KL axis, nats
	cdfSamples   = 512           // points per CDF curve, log-spaced over the axis
	windowBlocks = 200           // about this many windows along the per-position plot
	plotMargin   = vg.Length(10) // points of white around every figure
)

// runColors is the Okabe–Ito palette (distinguishable with the common
// colour-vision deficiencies), cycled with dashes beyond seven runs.
var runColors = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xFF}, // black
}

// Plot writes the comparison's plots into dir (created if missing), each
// as PNG and as SVG with its fonts embedded, one set per definition group
// (file names get "-g1", "-g2", … when there are several groups):
//
//   - kl-cdf: the fraction of positions whose KL is ≤ x, x in nats on a
//     log axis from 1e-4 to the largest KL (positions below 1e-4, including
//     slightly negative ones, count from the left edge);
//   - kl-position: KL by position within a row (rowPlot): one panel per
//     data source of the trace, in each per run the mean over the rows at
//     each position (in windows of W positions, W chosen for about 64
//     windows along the longest row) and a band of ± its standard error
//     across rows, on a log axis. It needs the reports' row_positions
//     (and sources, else one panel of all rows); runs whose reports lack
//     them (an older forge eval) are left out with a note, and when no run
//     has them the KL is drawn along the whole trace instead, averaged
//     over consecutive windows (about 200), with a note saying so;
//   - kl-parts: for ablation runs (reports with parts or layers), mean KL
//     (top panel) and p99 KL (bottom panel) per run as bars;
//   - kl-bpw: mean KL against bits per weight for the full runs that
//     report their size (at least two), with the Pareto front of those
//     runs (no run of fewer or as many bits has a lower KL) as a staircase.
//
// The first two need per-position KL; a group without any is skipped, and
// notes says so, as it does for runs left out for lack of KL. Output is a
// function of the comparison alone, so the same input writes the same
// bytes. files lists the paths written.
func (c *Set) Plot(dir string) (files, notes []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("compare: plots: %w", err)
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		suffix := ""
		if len(c.Groups) > 1 {
			suffix = fmt.Sprintf("-g%d", i+1)
		}
		var withKL, ablation []*Run
		var without []string
		for _, r := range g.Runs {
			if r.KL != nil {
				withKL = append(withKL, r)
			} else {
				without = append(without, r.Name)
			}
			if r.Ablation() {
				ablation = append(ablation, r)
			}
		}
		switch {
		case len(withKL) == 0:
			notes = append(notes, fmt.Sprintf("kl-cdf%s, kl-position%s: skipped (definition %q): no per-position KL files",
				suffix, suffix, g.Definition))
		case len(without) > 0:
			notes = append(notes, fmt.Sprintf("kl-cdf%s, kl-position%s: left out %s (no per-position KL file)",
				suffix, suffix, strings.Join(without, ", ")))
		}
		var jobs []plotJob
		if len(withKL) > 0 {
			position, note := positionJob(withKL, g.Definition, suffix)
			if note != "" {
				notes = append(notes, note)
			}
			jobs = append(jobs, plotJob{"kl-cdf" + suffix, func() (plotRender, error) { return cdfPlot(withKL, g.Definition) }},
				plotJob{"kl-position" + suffix, position})
		}
		if len(ablation) > 0 {
			jobs = append(jobs, plotJob{"kl-parts" + suffix, func() (plotRender, error) { return partsPlot(ablation, g.Definition) }})
		}
		pf, note, err := paretoPlot(dir, "kl-bpw"+suffix, g.Runs, g.Definition)
		files = append(files, pf...)
		if err != nil {
			return files, notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		for _, job := range jobs {
			render, err := job.make()
			if err != nil {
				return files, notes, fmt.Errorf("compare: plot %s: %w", job.name, err)
			}
			written, err := savePlot(dir, job.name, render)
			files = append(files, written...)
			if err != nil {
				return files, notes, err
			}
		}
	}
	return files, notes, nil
}

// plotJob names one figure and builds it.
type plotJob struct {
	name string
	make func() (plotRender, error)
}

// plotRender is a built figure: its size and how to draw it on a canvas.
type plotRender struct {
	w, h vg.Length
	draw func(draw.Canvas)
}

// single wraps one plot as a figure of the default size.
func single(p *plot.Plot) plotRender {
	return plotRender{plotWidth, plotHeight, p.Draw}
}

// savePlot writes dir/name.png and dir/name.svg (fonts embedded).
func savePlot(dir, name string, r plotRender) ([]string, error) {
	margin := func(c vg.CanvasSizer) draw.Canvas {
		return draw.Crop(draw.New(c), plotMargin, -plotMargin, plotMargin/2, -plotMargin/2)
	}
	png := vgimg.NewWith(vgimg.UseWH(r.w, r.h), vgimg.UseDPI(plotDPI))
	r.draw(margin(png))
	svg := vgsvg.NewWith(vgsvg.UseWH(r.w, r.h), vgsvg.EmbedFonts(true))
	r.draw(margin(svg))
	var files []string
	for _, out := range []struct {
		ext    string
		writer io.WriterTo
	}{{".png", vgimg.PngCanvas{Canvas: png}}, {".svg", svg}} {
		var buf bytes.Buffer
		path := filepath.Join(dir, name+out.ext)
		if _, err := out.writer.WriteTo(&buf); err != nil {
			return files, fmt.Errorf("compare: plot %s: %w", path, err)
		}
		if err := durable.WriteFile(path, buf.Bytes()); err != nil {
			return files, fmt.Errorf("compare: plot %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// newPlot returns a plot titled title with the definition on a second line.
func newPlot(title, definition string) *plot.Plot {
	p := plot.New()
	if len(definition) > 90 {
		definition = definition[:87] + "..."
	}
	p.Title.Text = title + "\ndefinition: " + definition
	p.Title.Padding = vg.Points(6)
	return p
}

// styleLine colours the i-th run's line.
func styleLine(l *plotter.Line, i int) {
	l.Color = runColors[i%len(runColors)]
	l.Width = vg.Points(1.5)
	if k := i / len(runColors); k > 0 {
		l.Dashes = []vg.Length{vg.Points(float64(2 + 2*k)), vg.Points(2)}
	}
}

// cdfPlot draws the empirical CDF of each run's per-position KL:
// y(x) = |{positions with KL ≤ x}| / N, sampled at cdfSamples log-spaced x.
func cdfPlot(runs []*Run, definition string) (plotRender, error) {
	p := newPlot("Cumulative distribution of per-position KL", definition)
	p.X.Label.Text = "KL(p||q) at a position, nats (log scale)"
	p.Y.Label.Text = "fraction of positions with KL ≤ x"
	p.Add(plotter.NewGrid())
	xmax := 10 * cdfMinKL
	for _, r := range runs {
		for _, v := range r.KL {
			xmax = math.Max(xmax, float64(v))
		}
	}
	for i, r := range runs {
		sorted := make([]float64, len(r.KL))
		for j, v := range r.KL {
			sorted[j] = float64(v)
		}
		sort.Float64s(sorted)
		pts := make(plotter.XYs, cdfSamples)
		for k := range pts {
			x := cdfMinKL * math.Pow(xmax/cdfMinKL, float64(k)/(cdfSamples-1))
			if k == cdfSamples-1 {
				x = xmax // exactly, so the curve ends at 1
			}
			below := sort.Search(len(sorted), func(j int) bool { return sorted[j] > x })
			pts[k] = plotter.XY{X: x, Y: float64(below) / float64(len(sorted))}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return plotRender{}, err
		}
		styleLine(l, i)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (median %s, p99 %s)", r.Name, formatKL(r.MedianKL), formatKL(r.P99KL)), l)
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, decadeTicks{}
	p.X.Min, p.X.Max = cdfMinKL, xmax
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = fractionTicks{}
	// Every curve has reached 1 at the right: the bottom right is empty.
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	return single(p), nil
}

// positionJob chooses the kl-position figure: by position within a row
// for the runs whose reports give the row layout, else along the trace;
// note says what was left out or why rows are not shown.
func positionJob(runs []*Run, definition, suffix string) (build func() (plotRender, error), note string) {
	var rowed []*Run
	var unrowed []string
	for _, r := range runs {
		if len(r.RowPositions) > 0 {
			rowed = append(rowed, r)
		} else {
			unrowed = append(unrowed, r.Name)
		}
	}
	const old = "written by a forge eval older than row_positions; re-run the evaluation with a JSON report to record them"
	switch {
	case len(rowed) == 0:
		return func() (plotRender, error) { return positionPlot(runs, definition) }, fmt.Sprintf(
			"kl-position%s: the reports give no row boundaries (%s): KL is drawn along the whole trace, rows run together", suffix, old)
	case len(unrowed) > 0:
		note = fmt.Sprintf("kl-position%s: left out %s: no row boundaries in the report (%s)", suffix, strings.Join(unrowed, ", "), old)
	}
	return func() (plotRender, error) { return rowPlot(rowed, definition) }, note
}

// positionPlot draws each run's KL along the trace as the mean over
// consecutive windows of w positions, w = ⌈N_max / windowBlocks⌉, plotted
// at each window's centre on a log KL axis (window means below 1e-4 nats,
// possible only where the candidate matches the reference, at 1e-4).
func positionPlot(runs []*Run, definition string) (plotRender, error) {
	n := 0
	for _, r := range runs {
		n = max(n, len(r.KL))
	}
	w := max(1, (n+windowBlocks-1)/windowBlocks)
	title := "KL along the trace, rows run together (mean over windows of " + fmt.Sprint(w) + " positions)"
	if w == 1 {
		title = "KL along the trace, rows run together (each position)"
	}
	title += "\nrow boundaries unknown: reports from an older forge eval"
	p := newPlot(title, definition)
	p.X.Label.Text = "position in the trace"
	p.Y.Label.Text = "KL(p||q), nats (log scale)"
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), 10*cdfMinKL
	for i, r := range runs {
		pts := make(plotter.XYs, 0, (len(r.KL)+w-1)/w)
		for start := 0; start < len(r.KL); start += w {
			end := min(start+w, len(r.KL))
			var sum float64
			for _, v := range r.KL[start:end] {
				sum += float64(v)
			}
			mean := math.Max(sum/float64(end-start), cdfMinKL)
			lo, hi = math.Min(lo, mean), math.Max(hi, mean)
			pts = append(pts, plotter.XY{X: float64(start+end-1) / 2, Y: mean})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return plotRender{}, err
		}
		styleLine(l, i)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (mean %s)", r.Name, formatKL(r.MeanKL)), l)
	}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, decadeTicks{}
	// A decade and a half of headroom keeps the legend above the lines.
	p.Y.Min, p.Y.Max = lo/2, hi*math.Pow(10, 1.5)
	p.X.Min, p.X.Max = 0, float64(n-1)
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(4)
	return single(p), nil
}

// partsPlot draws the ablation runs' mean KL (top panel) and p99 KL
// (bottom panel) as bars labelled with their parts and layers.
func partsPlot(runs []*Run, definition string) (plotRender, error) {
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = ablationLabel(r)
	}
	count := map[string]int{}
	for _, l := range labels {
		count[l]++
	}
	for i, r := range runs {
		if count[labels[i]] > 1 { // the same ablation of different candidates
			labels[i] = r.Name + "\n" + labels[i]
		}
	}
	w := max(plotWidth, vg.Length(len(runs))*0.9*vg.Inch)
	// Bars take about half of each run's slot, at most 60 points.
	barWidth := min(vg.Points(60), (w-vg.Inch)/vg.Length(2*len(runs)))
	panels := make([]*plot.Plot, 2)
	for k, stat := range []struct {
		title, axis string
		value       func(*Run) float64
		colour      color.Color
	}{
		{"Ablations: KL per quantized part / layer band", "mean KL, nats", func(r *Run) float64 { return r.MeanKL }, runColors[0]},
		{"", "p99 KL, nats", func(r *Run) float64 { return r.P99KL }, runColors[1]},
	} {
		p := plot.New()
		if k == 0 {
			p = newPlot(stat.title, definition)
		}
		p.Y.Label.Text = stat.axis
		vals := make(plotter.Values, len(runs))
		marks := plotter.XYLabels{XYs: make(plotter.XYs, len(runs)), Labels: make([]string, len(runs))}
		for i, r := range runs {
			vals[i] = stat.value(r)
			marks.XYs[i] = plotter.XY{X: float64(i), Y: vals[i]}
			marks.Labels[i] = formatKL(vals[i])
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return plotRender{}, err
		}
		bars.Color, bars.LineStyle.Width = stat.colour, 0
		above, err := plotter.NewLabels(marks)
		if err != nil {
			return plotRender{}, err
		}
		for i := range above.TextStyle { // centred just above the bar
			above.TextStyle[i].XAlign, above.TextStyle[i].YAlign = text.XCenter, text.YBottom
		}
		above.Offset = vg.Point{Y: vg.Points(2)}
		grid := plotter.NewGrid()
		grid.Vertical.Color = nil // the bars mark the x positions
		p.Add(grid, bars, above)
		p.NominalX(labels...)
		p.X.Min, p.X.Max = -0.5, float64(len(runs))-0.5
		p.Y.Min = math.Min(0, p.Y.Min)
		p.Y.Max *= 1.15 // room for the value labels
		panels[k] = p
	}
	h := 1.5 * plotHeight
	return plotRender{w, h, func(c draw.Canvas) {
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
		canvases := plot.Align([][]*plot.Plot{{panels[0]}, {panels[1]}}, tiles, c)
		panels[0].Draw(canvases[0][0])
		panels[1].Draw(canvases[1][0])
	}}, nil
}

// ablationLabel names what an ablation run quantized: "mlp, layers 24-31".
func ablationLabel(r *Run) string {
	parts := r.Parts
	if parts == "" {
		parts = "all parts"
	}
	if r.Layers == "" {
		return parts
	}
	return parts + ", layers " + r.Layers
}

// decadeTicks marks a log axis: labelled major ticks at the powers of ten
// (1e-4 … 100 written out as decimals), minor ticks at 2…9 times them.
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo) + 1e-9); e <= math.Ceil(math.Log10(hi)-1e-9); e++ {
		decade := math.Pow(10, e)
		for k := 1.0; k < 10; k++ {
			v := k * decade
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			label := ""
			if k == 1 {
				label = strconv.FormatFloat(v, 'f', -1, 64)
				if e < -4 || e > 5 {
					label = strconv.FormatFloat(v, 'g', -1, 64)
				}
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// fractionTicks marks a [0, 1] axis every 0.1, labelled every 0.2.
type fractionTicks struct{}

// Ticks implements plot.Ticker.
func (fractionTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// PointsPNG writes to path (which must not exist) a PNG of points (xs[i],
// ys[i]) with ±errs[i] error bars and integer ticks at every x from
// xs[0] to the last: a per-row figure such as forge ab's KL of verify
// blocks against decode steps. The y axis starts at 0 and shows at least
// yMin (an exact result, all zeros, still draws an axis).
func PointsPNG(path, title, xLabel, yLabel string, xs, ys, errs []float64, yMin float64) error {
	if len(xs) == 0 || len(ys) != len(xs) || len(errs) != len(xs) {
		return fmt.Errorf("%s: %d x, %d y, %d error values to plot", path, len(xs), len(ys), len(errs))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	pts := make(plotter.XYs, len(xs))
	bars := make(plotter.YErrors, len(xs))
	top := yMin
	ticks := []plot.Tick{}
	for i := range xs {
		pts[i] = plotter.XY{X: xs[i], Y: ys[i]}
		bars[i].Low, bars[i].High = errs[i], errs[i]
		top = max(top, 1.2*(ys[i]+errs[i]))
		ticks = append(ticks, plot.Tick{Value: xs[i], Label: strconv.FormatFloat(xs[i], 'g', -1, 64)})
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s.GlyphStyle.Radius = vg.Points(3)
	s.GlyphStyle.Color = runColors[0]
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, bars})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	p.Add(plotter.NewGrid(), s, eb)
	p.X.Min, p.X.Max = xs[0]-0.5, xs[len(xs)-1]+0.5
	p.Y.Min, p.Y.Max = 0, top
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	c := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	p.Draw(draw.Crop(draw.New(c), plotMargin, -plotMargin, plotMargin/2, -plotMargin/2))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return durable.WriteNew(path, buf.Bytes())
}
