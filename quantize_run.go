package forge

import (
	"context"
	"fmt"
	"runtime/debug"

	"forge/bundle"
	"forge/calib"
	"forge/checkpoint"
	"forge/corpus"
	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/quant"
	"forge/tensor"
)

// quantizer carries one Quantize run.
type quantizer struct {
	cfg   QuantizeConfig
	r     *plan.Recipe
	ck    *checkpoint.Checkpoint
	specs map[string]quant.Spec // matrices that get a lut format
	names []string              // the same, in checkpoint order
	shape map[string][2]int     // their [out, in]
	wd    *bundle.WorkDir
	snr   map[string]*bundle.SNREntry
	// evalTrace is the evaluation trace the calibration was checked
	// against (nil: none given); the manifest records it.
	evalTrace *evalTraceCheck
}

// runDirect quantizes every matrix from its weights alone (no calibration).
func (q *quantizer) runDirect(ctx context.Context) error {
	for i, name := range q.names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, _, ok, err := q.wd.Load(name); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if err := q.quantize(ctx, name, nil); err != nil {
			return err
		}
		if p := q.cfg.Progress; p != nil {
			p(int64(i+1), int64(len(q.names)))
		}
	}
	return nil
}

// runCalibrated runs the model layer by layer over the calibration rows,
// resuming after the last layer whose matrices are all in the work
// directory. The model runs on the stored copies of finished matrices,
// mapped from OUT.work, so that finished layers live in the page cache.
func (q *quantizer) runCalibrated(ctx context.Context, set *corpus.Set) error {
	m, err := model.Load(q.ck)
	if err != nil {
		return err
	}
	train, held, err := set.HoldOut(q.holdOut(len(set.Rows)))
	if err != nil {
		return err
	}
	from, err := q.restore(m)
	if err != nil {
		return err
	}
	run := calib.Runner{Model: m, Train: train, Held: held,
		Skip: func(g calib.Group) bool {
			for _, n := range g.Names {
				if _, ok := q.specs[n]; ok {
					return false
				}
			}
			return true
		},
		Rotation: func(g calib.Group) lut.Rotation {
			if s := q.specs[g.Names[0]]; s.Rotation != nil {
				return lut.NewHadamard(q.shape[g.Names[0]][1], *s.Rotation)
			}
			return nil
		},
		Progress: func(done, total int) {
			// A layer's Hessians and GPTQ buffers are garbage now: return
			// them to the OS so that the peak stays one layer's working set.
			debug.FreeOSMemory()
			if p := q.cfg.Progress; p != nil {
				p(int64(done), int64(total))
			}
		},
	}
	if q.r.Reconstruct != nil {
		// The reference model makes the targets: a second, unquantized copy.
		if run.Reference, err = model.Load(q.ck); err != nil {
			return err
		}
		run.LocalTarget = q.r.Reconstruct.Target == "local"
		run.Reconstruct = func(li int, in, target []tensor.Matrix) (map[string]model.Linear, error) {
			return q.reconstruct(ctx, m, li, in, target, len(train))
		}
	}
	return run.Run(ctx, from, func(g calib.Group, st calib.Stats) (map[string]model.Linear, error) {
		out := map[string]model.Linear{}
		for _, name := range g.Names {
			if _, ok := q.specs[name]; !ok {
				continue
			}
			if err := q.quantize(ctx, name, &quant.Stats{Train: st.Train, Held: st.Held}); err != nil {
				return nil, err
			}
			lm, _, _, err := q.wd.Load(name)
			if err != nil {
				return nil, err
			}
			out[name] = lm
		}
		return out, nil
	})
}

// restore puts the stored matrices of every layer that is complete in the
// work directory (with its reconstruction log, when the recipe
// reconstructs) into m's slots and returns the first incomplete layer.
func (q *quantizer) restore(m *model.Model) (int, error) {
	L := len(m.Config().Layers)
	for li := range L {
		if q.r.Reconstruct != nil {
			if _, ok, err := q.wd.Note(reconNote(li)); err != nil || !ok {
				return li, err
			}
		}
		got := map[string]*lut.Matrix{}
		for _, g := range calib.Groups(m.Config(), li) {
			for _, n := range g.Names {
				if _, ok := q.specs[n]; !ok {
					continue
				}
				lm, _, ok, err := q.wd.Load(n)
				if err != nil {
					return 0, err
				}
				if !ok {
					return li, nil
				}
				got[n] = lm
			}
		}
		for n, lm := range got {
			*m.Slot(n) = lm
		}
	}
	return L, nil
}

// quantize makes one matrix (quant.Spec.Quantize: rotated, quantized,
// corrected) and stores it in the work directory.
func (q *quantizer) quantize(ctx context.Context, name string, st *quant.Stats) error {
	spec := q.specs[name]
	v, err := q.ck.Vector(name)
	if err != nil {
		return err
	}
	sh := q.shape[name]
	lm, rep, err := spec.Quantize(ctx, tensor.FromSlice(sh[0], sh[1], v), st)
	if err != nil {
		return fmt.Errorf("quantize %s: %w", name, err)
	}
	var snr *bundle.SNREntry
	if rep != nil {
		snr = snrEntry(rep)
		if q.cfg.Log != nil {
			refit := ""
			if snr.Refit != nil {
				refit = fmt.Sprintf("  refit %6.2f dB (%s)", *snr.Refit, map[bool]string{true: "kept", false: "not kept"}[snr.Refitted])
			}
			q.cfg.Log(fmt.Sprintf("%-44s %-24s held-out SNR: rtn %6.2f dB  %s %6.2f dB%s  final %6.2f dB",
				name, spec.Format, snr.RTN, spec.Method, snr.Method, refit, snr.Final))
		}
	}
	if err := q.wd.Save(name, lm, snr); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}
