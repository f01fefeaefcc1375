package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"forge/model"
	"forge/plan"
	"forge/recon"
	"forge/tensor"
)

// ReconLayer is one layer's entry in a bundle's reconstruction log
// (manifest quant.recipe.reconstruction_log; reference-pipeline.md §2).
// Losses are recon's normalized MSE on the held-out calibration rows.
type ReconLayer struct {
	Layer      int     `json:"layer"`
	Kind       string  `json:"kind"`
	HeldBefore float64 `json:"held_before"`
	HeldAfter  float64 `json:"held_after"`
	Kept       bool    `json:"kept"`
	// StreamErr is the held-out normalized MSE between the quantized and
	// the reference stream after the layer (target stream only).
	StreamErr  *float64 `json:"stream_err,omitempty"`
	TrainFirst float64  `json:"train_first"`
	TrainLast  float64  `json:"train_last"`
	Steps      int      `json:"steps"`
	Reverted   string   `json:"reverted,omitempty"`
	Seconds    float64  `json:"s"`
}

// reconSettings resolves the configuration's reconstruction settings (nil:
// off) with the reference pipeline's defaults.
func (cfg QuantizeConfig) reconSettings() *plan.Reconstruct {
	if !cfg.Reconstruct {
		return nil
	}
	pick := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	c := &plan.Reconstruct{Steps: cfg.ReconSteps, Batch: cfg.ReconBatch, LRLUT: pick(cfg.ReconLRLUT, 1e-3),
		LRScale: pick(cfg.ReconLRScale, 1e-3), LRRank: pick(cfg.ReconLRRank, 1e-4), Target: cfg.ReconTarget}
	if c.Steps == 0 {
		c.Steps = 100
	}
	if c.Batch == 0 {
		c.Batch = 2
	}
	if c.Target == "" {
		c.Target = "stream"
	}
	return c
}

func reconNote(li int) string { return fmt.Sprintf("recon-layer-%d", li) }

// reconstruct fits layer li's quantized matrices (recon.Fit) to the
// targets, stores the kept values in the work directory with the layer's
// log, and returns them for the model's slots.
func (q *quantizer) reconstruct(ctx context.Context, m *model.Model, li int, in, target []tensor.Matrix, nTrain int) (map[string]model.Linear, error) {
	start := time.Now()
	c := m.Config()
	layer, ms, err := recon.Build(&c, li, q.ck, func(name string) model.Linear { return *m.Slot(name) })
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(ms))
	list := make([]*recon.Matrix, len(names))
	for i, n := range names {
		list[i] = ms[n]
	}
	rows := make([]recon.Sample, len(in))
	for i := range in {
		rows[i] = recon.Sample{T: in[i].Rows, X: widen64(in[i].Data), Target: widen64(target[i].Data)}
	}
	s := q.r.Reconstruct
	rep, err := recon.Fit(layer, list, rows[:nTrain], rows[nTrain:], recon.Options{Steps: s.Steps, Batch: s.Batch,
		LRLUT: s.LRLUT, LRScale: s.LRScale, LRRank: s.LRRank, Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("quantize: reconstruct layer %d: %w", li, err)
	}
	entry := ReconLayer{Layer: li, Kind: c.Layers[li].String(), HeldBefore: rep.HeldBefore, HeldAfter: rep.HeldAfter,
		Kept: rep.Kept, TrainFirst: rep.TrainFirst, TrainLast: rep.TrainLast, Steps: rep.Steps, Reverted: rep.Reverted,
		Seconds: time.Since(start).Seconds()}
	if s.Target == "stream" {
		v := rep.HeldBefore
		if rep.Kept {
			v = rep.HeldAfter
		}
		entry.StreamErr = &v
	}
	out := map[string]model.Linear{}
	if rep.Kept {
		for _, n := range names {
			lm, err := ms[n].Export()
			if err != nil {
				return nil, fmt.Errorf("quantize: reconstruct %s: %w", n, err)
			}
			_, snr, _, err := q.wd.Load(n)
			if err != nil {
				return nil, err
			}
			if err := q.wd.Save(n, lm, snr); err != nil {
				return nil, fmt.Errorf("quantize: %w", err)
			}
			stored, _, _, err := q.wd.Load(n)
			if err != nil {
				return nil, err
			}
			out[n] = stored
		}
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	if err := q.wd.SaveNote(reconNote(li), b); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if q.cfg.Log != nil {
		kept := "kept"
		if !rep.Kept {
			kept = "not kept"
		}
		line := fmt.Sprintf("reconstruct layer %d (%s): held-out %.5g → %.5g (%s), %d steps, %.1f s",
			li, entry.Kind, rep.HeldBefore, rep.HeldAfter, kept, rep.Steps, entry.Seconds)
		if rep.Reverted != "" {
			line += ": " + rep.Reverted
		}
		q.cfg.Log(line)
	}
	return out, nil
}

// reconLog reads the layers' reconstruction logs from the work directory.
func (q *quantizer) reconLog(L int) ([]ReconLayer, error) {
	var log []ReconLayer
	for li := range L {
		b, ok, err := q.wd.Note(reconNote(li))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("quantize: internal error: layer %d has no reconstruction log", li)
		}
		var e ReconLayer
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("quantize: %s: %w", reconNote(li), err)
		}
		log = append(log, e)
	}
	return log, nil
}

func widen64(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

// layers is the number of decoder layers of the checkpoint.
func (q *quantizer) layers() int {
	c, _ := q.ck.Config()
	return len(c.Layers)
}
