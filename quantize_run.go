package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"slices"

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
	r     *recipe
	ck    *checkpoint.Checkpoint
	specs map[string]plan.Spec // matrices that get a lut format
	ws    *workStore
	snr   map[string]*bundle.SNREntry
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
func (r *recipe) holdOut(n int) int {
	if r.cfg.HoldOut > 0 {
		return min(r.cfg.HoldOut, n-1)
	}
	return max(1, n/12)
}

// fingerprint is the run's settings as JSON: the work store's identity
// and the manifest's recipe.
func (r *recipe) fingerprint(source string, set *corpus.Set) ([]byte, error) {
	c := r.cfg
	rec := map[string]any{
		"source": source, "format": c.Format, "method": c.Method, "aw": c.AW, "hadamard": c.Hadamard,
		"seed": c.Seed, "forge_version": Version,
	}
	if c.Plan != "" {
		rec["plan"] = map[string]any{"path": c.Plan, "plan": r.plan}
	}
	if c.LowRankRank > 0 {
		parts := []string{}
		for p := range r.lrParts {
			parts = append(parts, string(p))
		}
		slices.Sort(parts)
		rec["lowrank"] = map[string]any{"rank": c.LowRankRank, "parts": parts, "weighted": c.LowRankWeighted}
	}
	if c.Hadamard {
		rec["rotation"] = map[string]any{"kind": "hadamard", "seeds": "1000+layer before gate/up, 2000+layer before down",
			"block": "1024 or the largest power of two dividing the width"}
	}
	if set != nil {
		rec["calibration"] = map[string]any{"recipe": set.Recipe(), "held_out_rows": r.holdOut(len(set.Rows))}
	}
	return json.Marshal(rec)
}

// runDirect quantizes every matrix from its weights alone (no calibration).
func (q *quantizer) runDirect(ctx context.Context) error {
	names := q.names()
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, _, ok, err := q.ws.load(name); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := q.quantize(ctx, name, nil); err != nil {
			return err
		}
		if p := q.r.cfg.Progress; p != nil {
			p(int64(i+1), int64(len(names)))
		}
	}
	return nil
}

// names lists the matrices that get a lut format, in checkpoint order.
func (q *quantizer) names() []string {
	var out []string
	for _, t := range q.ck.Tensors() {
		if _, ok := q.specs[t.Spec.Name]; ok {
			out = append(out, t.Spec.Name)
		}
	}
	return out
}

// runCalibrated runs the model layer by layer over the calibration rows,
// resuming after the last layer whose matrices are all in the work store.
func (q *quantizer) runCalibrated(ctx context.Context, set *corpus.Set) error {
	m, err := model.Load(q.ck)
	if err != nil {
		return err
	}
	train, held, err := set.HoldOut(q.r.holdOut(len(set.Rows)))
	if err != nil {
		return err
	}
	from, err := q.restore(m)
	if err != nil {
		return err
	}
	run := calib.Runner{
		Model: m, Train: train, Held: held,
		Skip: func(g calib.Group) bool {
			return !slices.ContainsFunc(g.Names, func(n string) bool { _, ok := q.specs[n]; return ok })
		},
		Rotation: func(g calib.Group) lut.Rotation {
			if seed, ok := q.r.rotationSeed(g.Names[0]); ok {
				_, in := q.shape(g.Names[0])
				return lut.NewHadamard(in, seed)
			}
			return nil
		},
	}
	run.Progress = func(done, total int) {
		// A layer's Hessians and GPTQ buffers are garbage now: return
		// them to the OS so that the peak stays one layer's working set.
		debug.FreeOSMemory()
		if p := q.r.cfg.Progress; p != nil {
			p(int64(done), int64(total))
		}
	}
	return run.Run(ctx, from, func(g calib.Group, st calib.Stats) (map[string]model.Linear, error) {
		out := map[string]model.Linear{}
		for _, name := range g.Names {
			if _, ok := q.specs[name]; !ok {
				continue
			}
			if _, err := q.quantize(ctx, name, &st); err != nil {
				return nil, err
			}
			// The model runs on the stored copy, mapped from OUT.work, so
			// that finished layers live in the page cache, not the heap.
			lm, _, _, err := q.ws.load(name)
			if err != nil {
				return nil, err
			}
			out[name] = lm
		}
		return out, nil
	})
}

// restore puts the stored matrices of every layer that is complete in the
// work store into m's slots and returns the first incomplete layer.
func (q *quantizer) restore(m *model.Model) (int, error) {
	L := len(m.Config().Layers)
	for li := range L {
		var names []string
		for _, g := range calib.Groups(m.Config(), li) {
			for _, n := range g.Names {
				if _, ok := q.specs[n]; ok {
					names = append(names, n)
				}
			}
		}
		got := map[string]*lut.Matrix{}
		for _, n := range names {
			lm, _, ok, err := q.ws.load(n)
			if err != nil {
				return 0, err
			}
			if !ok {
				return li, nil
			}
			got[n] = lm
		}
		for n, lm := range got {
			*m.Slot(n) = lm
		}
	}
	return L, nil
}

func (q *quantizer) shape(name string) (out, in int) {
	for _, t := range q.ck.Tensors() {
		if t.Spec.Name == name {
			return t.Spec.Shape[0], t.Spec.Shape[1]
		}
	}
	panic("forge: no tensor " + name)
}

// seed is the codebook seed of a matrix: cfg.Seed plus its index in the
// checkpoint, as for every method.
func (q *quantizer) seed(name string) uint64 {
	for i, t := range q.ck.Tensors() {
		if t.Spec.Name == name {
			return q.r.cfg.Seed + uint64(i)
		}
	}
	return q.r.cfg.Seed
}

// quantize makes one matrix (quant.Spec.Quantize: rotated, quantized,
// corrected), stores it in the work store and returns it.
func (q *quantizer) quantize(ctx context.Context, name string, st *calib.Stats) (*lut.Matrix, error) {
	s, cfg := q.specs[name], q.r.cfg
	v, err := q.ck.Vector(name)
	if err != nil {
		return nil, err
	}
	spec := quant.Spec{Format: s.Format, AW: cfg.AW, Rank: s.Rank, Weighted: cfg.LowRankWeighted,
		Seed: q.seed(name), LowRankSeed: cfg.Seed}
	if spec.Method, err = quant.ParseMethod(cfg.Method); err != nil {
		return nil, fmt.Errorf("quantize %s: %w", name, err)
	}
	if seed, ok := q.r.rotationSeed(name); ok {
		spec.Rotation = &seed
	}
	var qst *quant.Stats
	if st != nil {
		qst = &quant.Stats{Train: st.Train, Held: st.Held}
	}
	out, in := q.shape(name)
	lm, rep, err := spec.Quantize(ctx, tensor.FromSlice(out, in, v), qst)
	if err != nil {
		return nil, fmt.Errorf("quantize %s: %w", name, err)
	}
	var snr *bundle.SNREntry
	if rep != nil {
		snr = &bundle.SNREntry{RTN: finiteSNR(rep.RTN), Method: finiteSNR(rep.Method), Final: finiteSNR(rep.Final)}
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf("%-44s %-24s held-out SNR: rtn %6.2f dB  %s %6.2f dB  final %6.2f dB",
				name, s.Format, snr.RTN, spec.Method, snr.Method, snr.Final))
		}
	}
	return lm, q.ws.save(name, lm, snr)
}

// finiteSNR is an SNR as the manifest records it: 999 dB for an exact
// matrix (+Inf), which JSON cannot hold.
func finiteSNR(v float64) float64 {
	if math.IsInf(v, 1) {
		return 999
	}
	return v
}
