package forge

import (
	"fmt"

	"forge/eval/compare"
)

// PlotAB writes the teacher-forced part of rep as a PNG to path (which
// must not exist): the mean KL(p_step ‖ p_block) at each row of the verify
// block, with ±1 standard error bars, and the top-1 agreement in the
// title.
func PlotAB(rep *ABReport, path string) error {
	if len(rep.Rows) == 0 {
		return fmt.Errorf("%s: no teacher-forced rows to plot", path)
	}
	title := fmt.Sprintf("Verify blocks of %d rows against decode steps (%d tokens teacher-forced)", rep.Block, rep.TF)
	if rep.All != nil {
		title += fmt.Sprintf("\nall rows: KL %.3g ± %.2g nats, top-1 %.2f%%", rep.All.KL, rep.All.KLSE, 100*rep.All.Top1)
	}
	var xs, ys, es []float64
	for _, r := range rep.Rows {
		xs, ys, es = append(xs, float64(r.Row)), append(ys, r.KL), append(es, r.KLSE)
	}
	return compare.PointsPNG(path, title, "row of the verify block (0: the anchor)", "mean KL(p_step || p_block), nats", xs, ys, es, 1e-6)
}
