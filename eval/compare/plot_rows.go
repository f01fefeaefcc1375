package compare

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"forge/eval"
)

const (
	rowBins     = 64            // about this many windows along a row in the by-row plot
	panelHeight = 2.5 * vg.Inch // one source's panel
	titleHeight = 0.6 * vg.Inch // the figure's title above the panels
	bandAlpha   = 0x40          // opacity of the standard-error bands, of 0xFF
	allRows     = "all rows"    // the group of a run whose sources are unknown
	positionsAx = "position t in the row (predicting token t+1)"
)

// rowProfile is one run's KL by position within a row over a group of
// rows, in windows of w positions: for window b (positions b·w … b·w+w−1)
// and each row reaching it, x_r is the row's mean KL over its positions in
// the window; Mean is the mean of the x_r over the n rows reaching the
// window, and Lo, Hi = Mean ∓ se with se = √(Σ (x_r − Mean)² / (n(n−1)))
// the standard error across rows (0 when n = 1).
type rowProfile struct {
	X      []float64 // window centres: the mean of the window's first and last position
	Mean   []float64
	Lo, Hi []float64
	Rows   []int   // n per window
	All    float64 // mean KL over every position of the rows
}

// profileRows computes the rowProfile of rows (each a row's per-position
// KL) in windows of w positions. rows must not be empty.
func profileRows(rows [][]float32, w int) rowProfile {
	longest := 0
	var sum float64
	var count int
	for _, row := range rows {
		longest = max(longest, len(row))
		for _, v := range row {
			sum += float64(v)
		}
		count += len(row)
	}
	p := rowProfile{All: sum / float64(count)}
	x := make([]float64, 0, len(rows))
	for start := 0; start < longest; start += w {
		x = x[:0]
		for _, row := range rows {
			if len(row) <= start {
				continue
			}
			var s float64
			part := row[start:min(start+w, len(row))]
			for _, v := range part {
				s += float64(v)
			}
			x = append(x, s/float64(len(part)))
		}
		mean := eval.Mean(x)
		var se float64
		if n := len(x); n > 1 {
			var ss float64
			for _, v := range x {
				ss += (v - mean) * (v - mean)
			}
			se = math.Sqrt(ss / float64(n*(n-1)))
		}
		p.X = append(p.X, float64(start+min(start+w, longest)-1)/2)
		p.Mean, p.Lo, p.Hi = append(p.Mean, mean), append(p.Lo, mean-se), append(p.Hi, mean+se)
		p.Rows = append(p.Rows, len(x))
	}
	return p
}

// rowGroup is the rows of one data source of a run.
type rowGroup struct {
	label string
	rows  [][]float32
}

// groupRows cuts a run's per-position KL into its rows and groups them by
// source, labelled by file name (the full path where two names repeat);
// one group "all rows" when the sources are unknown.
func groupRows(r *Run) []rowGroup {
	rows := make([][]float32, len(r.RowPositions))
	off := 0
	for i, n := range r.RowPositions {
		rows[i] = r.KL[off : off+n]
		off += n
	}
	if len(r.Sources) == 0 {
		return []rowGroup{{allRows, rows}}
	}
	base := map[string]int{}
	for _, s := range r.Sources {
		base[filepath.Base(s.Path)]++
	}
	var groups []rowGroup
	for _, s := range r.Sources {
		label := filepath.Base(s.Path)
		if base[label] > 1 {
			label = s.Path
		}
		groups = append(groups, rowGroup{label, rows[:s.Rows]})
		rows = rows[s.Rows:]
	}
	return groups
}

// rowPanel is one source's panel: every run's profile over its rows.
type rowPanel struct {
	label    string
	runs     []int // index of each profile's run (for its colour and name)
	profiles []rowProfile
	rows     []int // rows of each run in the group
	minLen   int
	maxLen   int
}

// rowPanels groups the runs' rows by source label, in order of first
// appearance, and profiles each in windows of w positions.
func rowPanels(runs []*Run, w int) []*rowPanel {
	var panels []*rowPanel
	index := map[string]*rowPanel{}
	for i, r := range runs {
		for _, g := range groupRows(r) {
			p := index[g.label]
			if p == nil {
				p = &rowPanel{label: g.label, minLen: math.MaxInt}
				index[g.label] = p
				panels = append(panels, p)
			}
			for _, row := range g.rows {
				p.minLen, p.maxLen = min(p.minLen, len(row)), max(p.maxLen, len(row))
			}
			p.runs = append(p.runs, i)
			p.profiles = append(p.profiles, profileRows(g.rows, w))
			p.rows = append(p.rows, len(g.rows))
		}
	}
	return panels
}

// rowWindow is the window width for rows of at most longest positions:
// ⌈longest / rowBins⌉.
func rowWindow(runs []*Run) (w, longest int) {
	for _, r := range runs {
		for _, n := range r.RowPositions {
			longest = max(longest, n)
		}
	}
	return max(1, (longest+rowBins-1)/rowBins), longest
}

// rowPlot draws KL by position within a row: one panel per data source
// (the rows of each file of the trace's recipe), in each a line per run,
// the rowProfile mean on a log KL axis (values below 1e-4 nats at 1e-4),
// and a band of ± its standard error across rows. Panels share both axes.
func rowPlot(runs []*Run, definition string) (plotRender, error) {
	w, longest := rowWindow(runs)
	panels := rowPanels(runs, w)
	lo, hi := math.Inf(1), 10*cdfMinKL
	for _, p := range panels {
		for _, pr := range p.profiles {
			for b := range pr.Mean {
				lo = math.Min(lo, math.Max(pr.Lo[b], cdfMinKL))
				hi = math.Max(hi, pr.Hi[b])
			}
		}
	}
	plots := make([]*plot.Plot, len(panels))
	for k, panel := range panels {
		p, err := rowPanelPlot(runs, panel)
		if err != nil {
			return plotRender{}, err
		}
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, decadeTicks{}
		p.Y.Min, p.Y.Max = lo/2, hi*10 // a decade of headroom for the legend
		p.X.Min, p.X.Max = 0, float64(max(1, longest-1))
		if k == len(panels)-1 {
			p.X.Label.Text = positionsAx
		}
		plots[k] = p
	}
	title := fmt.Sprintf("KL by position within a row: mean over rows in windows of %d positions, band ± 1 s.e. across rows", w)
	if w == 1 {
		title = "KL by position within a row: mean over rows, band ± 1 s.e. across rows"
	}
	head := newPlot(title, definition)
	h := max(plotHeight, titleHeight+vg.Length(len(panels))*panelHeight)
	return plotRender{plotWidth, h, func(c draw.Canvas) {
		top := draw.Crop(c, 0, 0, c.Max.Y-c.Min.Y-titleHeight, 0)
		head.HideAxes()
		head.Draw(top)
		body := draw.Crop(c, 0, 0, 0, -titleHeight)
		grid := make([][]*plot.Plot, len(plots))
		for i, p := range plots {
			grid[i] = []*plot.Plot{p}
		}
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(10)}
		canvases := plot.Align(grid, tiles, body)
		for i, p := range plots {
			p.Draw(canvases[i][0])
		}
	}}, nil
}

// rowPanelPlot draws one panel's bands and lines, its title naming the
// source and its rows, its legend each run's mean KL over them.
func rowPanelPlot(runs []*Run, panel *rowPanel) (*plot.Plot, error) {
	p := plot.New()
	rows := panel.rows[0]
	for _, n := range panel.rows {
		rows = max(rows, n)
	}
	length := fmt.Sprintf("%d positions each", panel.maxLen)
	if panel.minLen != panel.maxLen {
		length = fmt.Sprintf("%d to %d positions", panel.minLen, panel.maxLen)
	}
	p.Title.Text = fmt.Sprintf("%s: %d rows, %s", panel.label, rows, length)
	p.Y.Label.Text = "KL, nats (log)"
	p.Add(plotter.NewGrid())
	for k, pr := range panel.profiles {
		i := panel.runs[k]
		band := make(plotter.XYs, 0, 2*len(pr.X))
		line := make(plotter.XYs, len(pr.X))
		for b := range pr.X {
			band = append(band, plotter.XY{X: pr.X[b], Y: math.Max(pr.Hi[b], cdfMinKL)})
			line[b] = plotter.XY{X: pr.X[b], Y: math.Max(pr.Mean[b], cdfMinKL)}
		}
		for b := len(pr.X) - 1; b >= 0; b-- {
			band = append(band, plotter.XY{X: pr.X[b], Y: math.Max(pr.Lo[b], cdfMinKL)})
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		r, g, bl, _ := runColors[i%len(runColors)].RGBA()
		poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), bandAlpha}
		poly.LineStyle.Width = 0
		l, err := plotter.NewLine(line)
		if err != nil {
			return nil, err
		}
		styleLine(l, i)
		p.Add(poly, l)
		p.Legend.Add(fmt.Sprintf("%s (mean %s)", runs[i].Name, formatKL(pr.All)), l)
	}
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(2)
	return p, nil
}
