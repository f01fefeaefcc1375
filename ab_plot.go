package forge

import (
	"bytes"
	"fmt"

	"forge/internal/durable"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotAB writes the teacher-forced part of rep as a PNG to path (which
// must not exist): the mean KL(p_step ‖ p_block) at each row of the verify
// block, with ±1 standard error bars, and the top-1 agreement in the
// title.
func PlotAB(rep *ABReport, path string) error {
	if len(rep.Rows) == 0 {
		return fmt.Errorf("%s: no teacher-forced rows to plot", path)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Verify blocks of %d rows against decode steps (%d tokens teacher-forced)", rep.Block, rep.TF)
	if rep.All != nil {
		p.Title.Text += fmt.Sprintf("\nall rows: KL %.3g ± %.2g nats, top-1 %.2f%%", rep.All.KL, rep.All.KLSE, 100*rep.All.Top1)
	}
	p.X.Label.Text = "row of the verify block (0: the anchor)"
	p.Y.Label.Text = "mean KL(p_step || p_block), nats"
	pts := make(plotter.XYs, len(rep.Rows))
	errs := make(plotter.YErrors, len(rep.Rows))
	top := 0.0
	for i, r := range rep.Rows {
		pts[i] = plotter.XY{X: float64(r.Row), Y: r.KL}
		errs[i] = struct{ Low, High float64 }{r.KLSE, r.KLSE}
		top = max(top, r.KL+r.KLSE)
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.GlyphStyle.Radius = vg.Points(3)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return err
	}
	p.Add(s, eb, plotter.NewGrid())
	p.X.Min, p.X.Max = -0.5, float64(rep.Block)-0.5
	ticks := make([]plot.Tick, rep.Block)
	for i := range ticks {
		ticks[i] = plot.Tick{Value: float64(i), Label: fmt.Sprint(i)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, max(top*1.2, 1e-6) // an exact block is 0 everywhere
	c := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 5.5*vg.Inch), vgimg.UseDPI(120))
	p.Draw(draw.Crop(draw.New(c), 10, -10, 5, -5))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return durable.WriteNew(path, buf.Bytes())
}
