package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"forge/bundle"
	"forge/checkpoint"
	"forge/corpus"
	"forge/internal/outpath"
	"forge/internal/units"
	"forge/model"
	"forge/plan"
	"forge/quant"
	"forge/source"
)

// QuantizeConfig configures Quantize. Zero values are the defaults; any
// conflicting or incomplete combination is an error (newRecipe).
type QuantizeConfig struct {
	Model  string // HF checkpoint directory
	Out    string // bundle directory to create
	Format string // default format of every quantizable matrix, e.g. "LUT4 per-tensor + pcs"
	Plan   string // plan JSON (package plan): per-part defaults and per-matrix overrides
	Method string // "rtn" (nearest rounding, the default) or "gptq"
	AW     bool   // codebooks weighted by diag(H) (needs Calib)
	// Hadamard rotates the inputs of the MLP matrices online (seeds
	// 1000 + layer before gate/up, 2000 + layer before down).
	Hadamard bool
	Calib    []string // calibration sources "FILE:ROWS" (package corpus)
	Seq      int      // tokens per calibration row (0: 1024)
	HoldOut  int      // calibration rows held out for SNRs (0: max(1, rows/12))
	// LowRankRank > 0 adds a rank-r correction of the quantization error to
	// the matrices of LowRankParts (default gdn,attn,kv); LowRankWeighted
	// fits it weighted by the calibration Hessian.
	LowRankRank     int
	LowRankParts    []string
	LowRankWeighted bool
	Seed            uint64
	Resume          bool // continue an interrupted run from OUT.work
	Overwrite       bool
	ShardSize       int64
	// Progress, if set, is called as work finishes with steps done and total.
	Progress func(done, total int64)
	// Log, if set, receives one line per quantized matrix (SNRs).
	Log func(line string)
}

// Quantize writes a bundle of cfg.Model with every quantizable matrix in
// the format --format or the plan assigns it, the rest copied in its source
// dtype. With calibration it runs the model layer by layer (calib.Runner,
// true sequential). Finished matrices go to OUT.work as they are made, so
// an interrupted run resumes with cfg.Resume; the bundle is assembled from
// them at the end and is complete and verified or absent (package bundle).
func Quantize(ctx context.Context, cfg QuantizeConfig) error {
	r, err := newRecipe(cfg)
	if err != nil {
		return err
	}
	if err := checkQuantizePaths(cfg); err != nil {
		return err
	}
	ck, err := source.OpenCheckpoint(cfg.Model)
	if err != nil {
		return err
	}
	defer ck.Close()
	items, specs, err := r.items(ck)
	if err != nil {
		return err
	}
	if cfg.Log != nil {
		for _, line := range lowRankCost(items) {
			cfg.Log(line)
		}
	}
	fp, err := ck.Fingerprint()
	if err != nil {
		return err
	}
	q := &quantizer{r: r, ck: ck, specs: specs, snr: map[string]*bundle.SNREntry{}}
	var set *corpus.Set
	if r.needsCalib() {
		if set, err = loadCalib(cfg); err != nil {
			return err
		}
	}
	recipeJSON, err := r.fingerprint(fp, set)
	if err != nil {
		return err
	}
	if q.ws, err = openWork(cfg.Out, recipeJSON, cfg.Resume); err != nil {
		return err
	}
	q.ws.Damaged = func(path string) {
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf("resume: %s failed its SHA-256 check (damaged); it is made again", path))
		}
	}
	defer q.ws.close(false)
	if set != nil {
		err = q.runCalibrated(ctx, set)
	} else {
		err = q.runDirect(ctx)
	}
	if err == nil {
		err = q.assemble(items, fp, recipeJSON)
	}
	if err != nil {
		if q.ws.close(false); q.ws.stored() == 0 {
			q.ws.close(true) // nothing to resume from
			return err
		}
		return &WorkKeptError{Dir: q.ws.dir, Bytes: q.ws.size(), Err: err}
	}
	return q.ws.close(true)
}

// WorkKeptError is a Quantize failure (or interruption) after matrices
// were made: they are kept in Dir (Bytes on disk), so that a run with the
// same settings and Resume continues from them.
type WorkKeptError struct {
	Dir   string
	Bytes int64
	Err   error
}

func (e *WorkKeptError) Error() string {
	return fmt.Sprintf("%v (the finished matrices are kept in %s for resuming)", e.Err, e.Dir)
}

func (e *WorkKeptError) Unwrap() error { return e.Err }

// checkQuantizePaths refuses an output, work or partial directory that
// overlaps an input (checkpoint, calibration files, plan), and an
// existing output that is not a forge bundle or that Overwrite does not
// allow replacing.
func checkQuantizePaths(cfg QuantizeConfig) error {
	inputs := append([]string{cfg.Model, cfg.Plan}, dataPaths(cfg.Calib)...)
	out := filepath.Clean(cfg.Out)
	for _, p := range []string{out + ".work", out + ".partial"} {
		if err := outpath.Disjoint([]string{p}, inputs); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
	}
	if err := checkOutputs(cfg.Overwrite, inputs, outpath.Target{Path: out, Dir: true, Owned: bundle.IsBundle}); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := outpath.CheckRemovable(out+".partial", bundle.PartialKind); err != nil {
		return fmt.Errorf("quantize: an interrupted export: %w", err)
	}
	if !cfg.Resume {
		if err := outpath.CheckRemovable(out+".work", workKind); err != nil {
			return fmt.Errorf("quantize: work directory: %w", err)
		}
	}
	return nil
}

// items declares the bundle's tensors in checkpoint order and the spec of
// every matrix that gets a lut format.
func (r *recipe) items(ck *checkpoint.Checkpoint) ([]bundle.Item, map[string]plan.Spec, error) {
	infos := ck.Tensors()
	items := make([]bundle.Item, len(infos))
	specs := map[string]plan.Spec{}
	var names []string
	for i, t := range infos {
		items[i] = bundle.Item{Name: t.Spec.Name, Shape: t.Spec.Shape, DType: t.DType, Matrix: t.Spec.Matrix}
		if !t.Spec.Quantizable {
			continue
		}
		names = append(names, t.Spec.Name)
		s, ok, err := r.spec(t.Spec.Name)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		if err := s.Format.CheckShape(t.Spec.Shape[0], t.Spec.Shape[1]); err != nil {
			return nil, nil, fmt.Errorf("quantize: %s cannot hold %s %v: %w", s.Format, t.Spec.Name, t.Spec.Shape, err)
		}
		if most := min(t.Spec.Shape[0], t.Spec.Shape[1]); s.Rank > most {
			return nil, nil, fmt.Errorf("quantize: %s %v: a low-rank correction of rank %d exceeds its smaller side %d", t.Spec.Name, t.Spec.Shape, s.Rank, most)
		}
		items[i].Format, items[i].Rank = s.Format, s.Rank
		if seed, ok := r.rotationSeed(t.Spec.Name); ok {
			h := quant.NewHadamard(t.Spec.Shape[1], seed)
			items[i].Rotation = &bundle.RotationEntry{Kind: "hadamard", Seed: seed, Block: h.Block()}
		}
		specs[t.Spec.Name] = s
	}
	if err := r.plan.Check(names); err != nil {
		return nil, nil, fmt.Errorf("quantize: plan %s: %w", r.cfg.Plan, err)
	}
	return items, specs, nil
}

// lowRankCost says, per part, what the low-rank corrections add to the
// stored size of its matrices (they can double a mixer at rank 32).
func lowRankCost(items []bundle.Item) []string {
	type cost struct{ without, with int64 }
	by := map[model.Part]*cost{}
	var parts []model.Part
	for _, it := range items {
		if it.Rank == 0 {
			continue
		}
		t, _ := model.Lookup(it.Name)
		c := by[t.Part]
		if c == nil {
			c = &cost{}
			by[t.Part] = c
			parts = append(parts, t.Part)
		}
		c.without += it.Format.Size(it.Shape[0], it.Shape[1], 0).Total()
		c.with += it.Format.Size(it.Shape[0], it.Shape[1], it.Rank).Total()
	}
	var out []string
	for _, p := range parts {
		c := by[p]
		out = append(out, fmt.Sprintf("low-rank correction: %s matrices %s → %s (+%.0f%%)", p,
			units.Bytes(c.without), units.Bytes(c.with), 100*float64(c.with-c.without)/float64(max(c.without, 1))))
	}
	return out
}

// assemble writes the bundle from the work store and the checkpoint.
func (q *quantizer) assemble(items []bundle.Item, fp string, recipeJSON []byte) error {
	cfg := q.r.cfg
	abs, _ := filepath.Abs(cfg.Model)
	var rec map[string]any
	if err := json.Unmarshal(recipeJSON, &rec); err != nil {
		return err
	}
	method := cfg.Method
	if method == "" {
		method = "rtn"
	}
	format := cfg.Format
	if format == "" && q.r.plan != nil && q.r.plan.Default != nil {
		format = q.r.plan.Default.Format.String()
	}
	w, err := bundle.Create(cfg.Out, items, bundle.WriteOptions{
		ShardSize: cfg.ShardSize, Overwrite: cfg.Overwrite, SourceDir: cfg.Model, SNR: q.snr,
		Manifest: bundle.Manifest{
			ForgeVersion: Version,
			Source:       bundle.SourceInfo{Path: abs, Fingerprint: fp},
			Quant:        bundle.QuantInfo{Method: method, Seed: cfg.Seed, Format: format, Recipe: rec},
		},
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, it := range items {
		if it.Format.Kind == 0 {
			raw, err := q.ck.Raw(it.Name)
			if err != nil {
				return err
			}
			if err := w.Raw(it.Name, raw); err != nil {
				return err
			}
			continue
		}
		m, snr, ok, err := q.ws.load(it.Name)
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
