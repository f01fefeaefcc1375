package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
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
	"forge/tokenizer"
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
}

// items declares the bundle's tensors in checkpoint order and records the
// spec of every matrix that gets a lut format; it logs what low-rank
// corrections add to each part's size.
func (q *quantizer) items() ([]bundle.Item, error) {
	infos := q.ck.Tensors()
	items := make([]bundle.Item, len(infos))
	q.shape = map[string][2]int{}
	var quantizable []string
	for i, t := range infos {
		items[i] = bundle.Item{Name: t.Spec.Name, Shape: t.Spec.Shape, DType: t.DType, Matrix: t.Spec.Matrix}
		if !t.Spec.Quantizable {
			continue
		}
		quantizable = append(quantizable, t.Spec.Name)
		s, ok, err := q.r.Spec(t.Spec, i)
		if err != nil {
			return nil, fmt.Errorf("quantize: %w", err)
		}
		if !ok {
			continue
		}
		items[i].Format, items[i].Rank = s.Format, s.Rank
		if s.Rotation != nil {
			h := lut.NewHadamard(t.Spec.Shape[1], *s.Rotation)
			items[i].Rotation = &bundle.RotationEntry{Kind: "hadamard", Seed: *s.Rotation, Block: h.Block()}
		}
		q.specs[t.Spec.Name], q.names = s, append(q.names, t.Spec.Name)
		q.shape[t.Spec.Name] = [2]int{t.Spec.Shape[0], t.Spec.Shape[1]}
	}
	if err := q.r.Plan.Check(quantizable); err != nil {
		return nil, fmt.Errorf("quantize: plan %s: %w", q.cfg.Plan, err)
	}
	if q.cfg.Log != nil {
		for _, line := range plan.LowRankCost(q.specs, q.shape) {
			q.cfg.Log(line)
		}
	}
	return items, nil
}

// loadCalib reads the calibration rows with the model's tokenizer.
func loadCalib(cfg QuantizeConfig) (*corpus.Set, error) {
	var specs []corpus.Spec
	for _, s := range cfg.Calib {
		sp, err := corpus.ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("quantize: calibration data: %w", err)
		}
		specs = append(specs, sp)
	}
	tok, err := tokenizer.Load(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("quantize: calibration needs the model's tokenizer: %w", err)
	}
	set, err := corpus.Load(specs, tok, corpus.Options{Seq: cfg.Seq, Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if len(set.Rows) < 2 {
		return nil, fmt.Errorf("quantize: the calibration data gives %d row; at least 2 are needed (one is held out)", len(set.Rows))
	}
	return set, nil
}

// holdOut is the number of calibration rows held out of n.
func (q *quantizer) holdOut(n int) int {
	if q.cfg.HoldOut > 0 {
		return min(q.cfg.HoldOut, n-1)
	}
	return max(1, n/12)
}

// record is the run's recipe as JSON: the work directory's identity and
// the manifest's recipe.
func (q *quantizer) record(fp string, set *corpus.Set) ([]byte, error) {
	if set == nil {
		return q.r.Record(fp, Version, nil, 0)
	}
	return q.r.Record(fp, Version, set.Recipe(), q.holdOut(len(set.Rows)))
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
// work directory into m's slots and returns the first incomplete layer.
func (q *quantizer) restore(m *model.Model) (int, error) {
	L := len(m.Config().Layers)
	for li := range L {
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
		snr = &bundle.SNREntry{RTN: finiteSNR(rep.RTN), Method: finiteSNR(rep.Method), Final: finiteSNR(rep.Final)}
		if q.cfg.Log != nil {
			q.cfg.Log(fmt.Sprintf("%-44s %-24s held-out SNR: rtn %6.2f dB  %s %6.2f dB  final %6.2f dB",
				name, spec.Format, snr.RTN, spec.Method, snr.Method, snr.Final))
		}
	}
	if err := q.wd.Save(name, lm, snr); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}

// finiteSNR is an SNR as the manifest records it: 999 dB for an exact
// matrix (+Inf), which JSON cannot hold.
func finiteSNR(v float64) float64 {
	if math.IsInf(v, 1) {
		return 999
	}
	return v
}

// assemble writes the bundle from the work directory and the checkpoint.
func (q *quantizer) assemble(items []bundle.Item, fp string, record []byte) error {
	abs, _ := filepath.Abs(q.cfg.Model)
	var rec map[string]any
	if err := json.Unmarshal(record, &rec); err != nil {
		return err
	}
	format := ""
	if q.r.Format != nil {
		format = q.r.Format.String()
	} else if q.r.Plan != nil && q.r.Plan.Default != nil {
		format = q.r.Plan.Default.Format.String()
	}
	w, err := bundle.Create(q.cfg.Out, items, bundle.WriteOptions{
		ShardSize: q.cfg.ShardSize, Overwrite: q.cfg.Overwrite, SourceDir: q.cfg.Model, SNR: q.snr,
		Manifest: bundle.Manifest{ForgeVersion: Version, Source: bundle.SourceInfo{Path: abs, Fingerprint: fp},
			Quant: bundle.QuantInfo{Method: q.r.Method.String(), Seed: q.cfg.Seed, Format: format, Recipe: rec}},
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, it := range items {
		if it.Format.Kind == 0 {
			raw, err := q.ck.Raw(it.Name)
			if err == nil {
				err = w.Raw(it.Name, raw)
			}
			if err != nil {
				return err
			}
			continue
		}
		m, snr, ok, err := q.wd.Load(it.Name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("quantize: internal error: %s was not quantized", it.Name)
		}
		q.snr[it.Name] = snr
		if err := w.Matrix(it.Name, m); err != nil {
			return err
		}
	}
	return w.Close()
}
