package compare

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
)

// frontRuns returns the full (not ablation) runs that report their bits per
// weight, sorted by size then mean KL, and which of them are on the Pareto
// front: no other run has fewer or as many bits and a lower mean KL. The
// size is the blocks' bpw (the decoder layers' matrices, the head left
// out) when every such run reports it, else the bpw of all the quantizable
// matrices; blocks says which.
func frontRuns(runs []*Run) (sized []*Run, front []bool, blocks bool) {
	blocks = true
	for _, r := range runs {
		if !r.Ablation() && r.BPW > 0 {
			sized = append(sized, r)
			blocks = blocks && r.BlocksBPW > 0
		}
	}
	size := func(r *Run) float64 {
		if blocks {
			return r.BlocksBPW
		}
		return r.BPW
	}
	slices.SortStableFunc(sized, func(a, b *Run) int {
		return cmp.Or(cmp.Compare(size(a), size(b)), cmp.Compare(a.MeanKL, b.MeanKL))
	})
	front = make([]bool, len(sized))
	best := 0.0
	for i, r := range sized {
		if i == 0 || r.MeanKL < best {
			front[i], best = true, r.MeanKL
		}
	}
	return sized, front, blocks
}

// paretoPlot draws the group's mean KL against bits per weight (kl-bpw;
// the size frontRuns picks):
// every full run with its bpw as a labelled point and the staircase of the
// runs on the Pareto front. It needs two such runs; otherwise it returns
// no files, and a note when there were two full runs to compare.
func paretoPlot(dir, name string, runs []*Run, definition string) (files []string, note string, err error) {
	sized, front, blocks := frontRuns(runs)
	if len(sized) < 2 {
		full := 0
		for _, r := range runs {
			if !r.Ablation() {
				full++
			}
		}
		if full >= 2 {
			note = fmt.Sprintf("%s: skipped (definition %q): fewer than two full runs report their bits per weight", name, definition)
		}
		return nil, note, nil
	}
	f := &ParetoFigure{
		Title:       fmt.Sprintf("Mean KL against size (%s)", definition),
		XLabel:      "bits per weight of the quantizable matrices (head included)",
		YLabel:      "mean KL, nats",
		FrontLabel:  "Pareto front of these runs",
		PointsLabel: "runs",
	}
	if blocks {
		f.XLabel = "bits per weight of the transformer blocks' matrices"
	}
	for i, r := range sized {
		x := r.BPW
		if blocks {
			x = r.BlocksBPW
		}
		m := Mark{Label: r.Name, X: x, Y: r.MeanKL}
		f.Points = append(f.Points, m)
		if front[i] {
			f.Front = append(f.Front, m)
		}
	}
	files, err = f.Write(filepath.Join(dir, name))
	return files, "", err
}
