package forge

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"

	"forge/bundle"
	"forge/calib"
	"forge/checkpoint"
	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/quant"
	"forge/tensor"
)

// workOut is the path whose work directory (bundle.WorkPath) keeps
// candidate ci's quantized matrices: OUT.c<ci>.work.
func (w *sweepRun) workOut(ci int) string {
	return filepath.Clean(w.cfg.Out) + ".c" + strconv.Itoa(ci)
}

// measured is the set of the work items (plan.Sweep.Item) measured so far.
func (w *sweepRun) measured() map[int]bool {
	done := map[int]bool{}
	for _, m := range w.s.Measurements {
		done[w.s.Item(m)] = true
	}
	return done
}

// step counts one piece of work done (a matrix made or a measurement)
// for the progress report.
func (w *sweepRun) step() {
	w.done++
	if w.cfg.Progress != nil {
		w.cfg.Progress(w.done, w.total)
	}
}

// quantized reports whether a candidate changes the weights (bf16 and
// fp16 keep the unit as the checkpoint stores it).
func quantized(c plan.Candidate) bool {
	f, err := lut.ParseFormat(c.Format)
	return err == nil && f.Quantized()
}

// pending lists, per candidate, the matrices that the shard's unmeasured
// items need quantized.
func (w *sweepRun) pending() []map[string]bool {
	s := w.s
	done := w.measured()
	need := make([]map[string]bool, len(s.Candidates))
	for ci := range need {
		need[ci] = map[string]bool{}
	}
	for k := range s.Items() {
		ci := k % len(s.Candidates)
		if done[k] || !w.shard.Owns(k) || !quantized(s.Candidates[ci]) {
			continue
		}
		for _, n := range s.Units[k/len(s.Candidates)].Names {
			need[ci][n] = true
		}
	}
	return need
}

// quantize makes every matrix the shard still needs, each candidate's in
// its own work directory (kept there across an interruption): from the
// weights alone, or with the statistics of the reference's inputs over
// the calibration rows (calib.Runner with nothing replaced, so every
// matrix sees what it sees in an ablation).
func (w *sweepRun) quantize(ctx context.Context, m *model.Model) error {
	need := w.pending()
	w.wds = make([]*bundle.WorkDir, len(w.s.Candidates))
	todo := map[string][]int{} // matrix → candidates still to make
	for ci, c := range w.s.Candidates {
		if len(need[ci]) == 0 {
			continue
		}
		id := append(append([]byte(nil), w.record...), []byte("\ncandidate: "+c.String())...)
		wd, err := bundle.OpenWork(w.workOut(ci), id, bundle.WorkOptions{Resume: w.cfg.Resume, ForgeVersion: Version,
			Damaged: func(path string, err error) {
				w.log("resume: %s failed its SHA-256 check (damaged); it is made again", path)
			}})
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		w.wds[ci] = wd
		for n := range need[ci] {
			if _, _, ok, err := wd.Load(n); err != nil {
				return fmt.Errorf("sweep: %w", err)
			} else if !ok {
				todo[n] = append(todo[n], ci)
			}
		}
	}
	made, total := 0, 0
	for _, cis := range todo {
		total += len(cis)
	}
	done := w.measured()
	w.total = int64(total)
	for k := range w.s.Items() {
		if w.shard.Owns(k) && !done[k] {
			w.total++
		}
	}
	if len(todo) == 0 {
		return nil
	}
	infos := w.ck.Tensors()
	index := map[string]int{}
	for i, t := range infos {
		index[t.Spec.Name] = i
	}
	one := func(name string, st *quant.Stats) error {
		cis := todo[name]
		slices.Sort(cis)
		for _, ci := range cis {
			if err := w.quantizeOne(ctx, infos[index[name]], index[name], ci, st); err != nil {
				return err
			}
			made++
			w.step()
		}
		if len(cis) > 0 {
			w.log("quantized %s in %d candidates (%d of %d matrices made)", name, len(cis), made, total)
		}
		return nil
	}
	if w.set == nil {
		for _, t := range infos {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := one(t.Spec.Name, nil); err != nil {
				return err
			}
		}
		return nil
	}
	train, held, err := w.set.HoldOut(sweepHoldOut(w.cfg.HoldOut, len(w.set.Rows)))
	if err != nil {
		return err
	}
	run := calib.Runner{Model: m, Train: train, Held: held,
		Skip: func(g calib.Group) bool {
			return !slices.ContainsFunc(g.Names, func(n string) bool { return len(todo[n]) > 0 })
		},
		Rotation: func(g calib.Group) lut.Rotation {
			t := infos[index[g.Names[0]]].Spec
			if seed, ok := w.r.Rotation(t); ok {
				return lut.NewHadamard(t.Shape[1], seed)
			}
			return nil
		},
		Progress: func(done, total int) { debug.FreeOSMemory() },
	}
	return run.Run(ctx, 0, func(g calib.Group, st calib.Stats) (map[string]model.Linear, error) {
		for _, n := range g.Names {
			if err := one(n, &quant.Stats{Train: st.Train, Held: st.Held}); err != nil {
				return nil, err
			}
		}
		return nil, nil // nothing replaced: the next groups see the reference
	})
}

// quantizeOne makes matrix t (the index-th tensor of the checkpoint) in
// candidate ci as forge quantize would with that candidate as its plan
// (plan.Recipe.Spec), and stores it in the candidate's work directory.
func (w *sweepRun) quantizeOne(ctx context.Context, t checkpoint.TensorInfo, index, ci int, st *quant.Stats) error {
	sp, err := w.s.Candidates[ci].Spec()
	if err != nil {
		return err
	}
	r := *w.r
	r.Plan = &plan.Plan{Default: &sp}
	spec, ok, err := r.Spec(t.Spec, index)
	if err != nil || !ok {
		return fmt.Errorf("sweep: %s in %s: no spec (%v)", t.Spec.Name, w.s.Candidates[ci], err)
	}
	v, err := w.ck.Vector(t.Spec.Name)
	if err != nil {
		return err
	}
	lm, rep, err := spec.Quantize(ctx, tensor.FromSlice(t.Spec.Shape[0], t.Spec.Shape[1], v), st)
	if err != nil {
		return fmt.Errorf("sweep: quantize %s in %s: %w", t.Spec.Name, w.s.Candidates[ci], err)
	}
	var snr *bundle.SNREntry
	if rep != nil {
		snr = snrEntry(rep)
	}
	if err := w.wds[ci].Save(t.Spec.Name, lm, snr); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}
