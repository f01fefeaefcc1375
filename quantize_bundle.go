package forge

import (
	"encoding/json"
	"fmt"
	"forge/bundle"
	"forge/corpus"
	"forge/lut"
	"forge/plan"
	"forge/quant"
	"forge/tokenizer"
	"math"
	"path/filepath"
)

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

// assemble writes the bundle from the work directory and the checkpoint.
func (q *quantizer) assemble(items []bundle.Item, fp string, record []byte) error {
	abs, _ := filepath.Abs(q.cfg.Model)
	var rec map[string]any
	if err := json.Unmarshal(record, &rec); err != nil {
		return err
	}
	if q.evalTrace != nil {
		// Not in the work record: resuming does not depend on it. As plain
		// JSON values, so that the manifest's content hash (over its JSON)
		// is the same when it is read back.
		raw, err := json.Marshal(q.evalTrace)
		if err != nil {
			return err
		}
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		rec["eval_trace"] = v
	}
	if q.r.Reconstruct != nil {
		log, err := q.reconLog(q.layers())
		if err != nil {
			return err
		}
		raw, err := json.Marshal(log)
		if err != nil {
			return err
		}
		var v []any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		rec["reconstruction_log"] = v
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

// finiteSNR is an SNR as the manifest records it: 999 dB for an exact
// matrix (+Inf), which JSON cannot hold.
// snrEntry is the manifest's record of a matrix's held-out SNRs.
func snrEntry(rep *quant.Report) *bundle.SNREntry {
	e := &bundle.SNREntry{RTN: finiteSNR(rep.RTN), Method: finiteSNR(rep.Method), Final: finiteSNR(rep.Final), Refitted: rep.Refitted}
	if !math.IsNaN(rep.Refit) {
		v := finiteSNR(rep.Refit)
		e.Refit = &v
	}
	return e
}

func finiteSNR(v float64) float64 {
	if math.IsInf(v, 1) {
		return 999
	}
	return v
}
