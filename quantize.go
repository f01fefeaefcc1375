package forge

import (
	"context"
	"fmt"
	"path/filepath"

	"forge/bundle"
	"forge/corpus"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/quant"
	"forge/source"
)

// QuantizeConfig configures Quantize. Zero values are the defaults; any
// conflicting or incomplete combination is an error (plan.Recipe.Check).
type QuantizeConfig struct {
	Model  string // HF checkpoint directory
	Out    string // bundle directory to create
	Format string // default format of every quantizable matrix, e.g. "LUT4 per-tensor + pcs"
	Plan   string // plan JSON (package plan): per-part defaults and per-matrix overrides
	// Preset, if set ("4bit", "3bit", "2bit": Presets), is the whole
	// recipe but the calibration data: no Format or Plan with it. With
	// Budget the planner picks the formats, from PresetCandidates.
	Preset string
	Method string // "rtn" (nearest rounding, the default) or "gptq"
	AW     bool   // codebooks weighted by diag(H) (needs Calib)
	// Hadamard rotates the inputs of the MLP matrices online (seeds
	// 1000 + layer before gate/up, 2000 + layer before down).
	Hadamard bool
	Calib    []string // calibration sources "FILE:ROWS" (package calib)
	// EvalTrace is a trace (forge trace) the bundle is to be evaluated on:
	// calibration rows that overlap its rows are refused before any work
	// (checkEvalTrace), and the trace is recorded in the manifest.
	EvalTrace string
	Seq       int // tokens per calibration row (0: 1024)
	HoldOut   int // calibration rows held out for SNRs (0: max(1, rows/12))
	// LowRankRank > 0 adds a rank-r correction of the quantization error to
	// the matrices of LowRankParts (default gdn,attn,kv); LowRankWeighted
	// fits it weighted by the calibration Hessian.
	LowRankRank     int
	LowRankParts    []string
	LowRankWeighted bool
	// NoRefit turns off the codebook and scale refit that a calibrated
	// recipe (gptq, AW or a weighted correction) otherwise runs on every
	// quantized matrix (quant.Spec.Refit; docs/quantization.md §3.2).
	NoRefit bool
	// Reconstruct fits each layer's codebooks, scales and factors to the
	// reference model's stream after its matrices are quantized (block
	// reconstruction, package recon; needs Calib). Zero settings are the
	// reference pipeline's: 100 Adam steps, batches of 2 rows, learning
	// rates 1e-3 (codebooks, scales) and 1e-4 (factors), target "stream"
	// (or "local").
	// ReconRank > 0 gives the matrices of LowRankParts (default gdn,
	// attn, kv) rank-ReconRank factors for the reconstruction to train,
	// started from the SVD of their quantization error (the reference's
	// LR_RANK): the low-rank correction of LowRankRank, which it replaces.
	Reconstruct                           bool
	ReconRank                             int
	ReconSteps, ReconBatch                int
	ReconLRLUT, ReconLRScale, ReconLRRank float64
	ReconTarget                           string
	Seed                                  uint64
	Resume                                bool // continue an interrupted run from OUT.work
	Overwrite                             bool
	ShardSize                             int64
	// Budget, if set ("2.6bpw", "3.1GiB": plan.ParseBudget), makes the
	// plan instead of Format or Plan: sweep → plan → quantize → gate
	// (quantizeBudget). Sweep reuses a measurement file; otherwise one is
	// made on SweepTrace with SweepCandidates, SweepUnit and SweepRows
	// (SweepConfig's defaults) and kept as OUT.sweep.json. EvalTrace is
	// the gate's held-out trace. Objective is the planner's ("mean").
	Budget, Sweep, SweepTrace  string
	SweepCandidates, SweepUnit string
	SweepRows                  int
	Objective                  string
	// presetHead is the head's format a budgeted preset gives the plan
	// and the gate's baseline (presetBudget); nil: the head as stored.
	presetHead *lut.Format
	// Progress, if set, is called as work finishes with steps done and total.
	Progress func(done, total int64)
	// Log, if set, receives one line per quantized matrix (SNRs).
	Log func(line string)
}

// Quantize writes a bundle of cfg.Model with every quantizable matrix in
// the format the recipe (default format, plan, method, rotation, low-rank
// correction) assigns it, the rest copied in its source dtype. With
// calibration it runs the model layer by layer (calib.Runner, true
// sequential). Finished matrices go to OUT.work as they are made, so an
// interrupted run resumes with cfg.Resume; the bundle is assembled from
// them at the end and is complete and verified or absent (package bundle).
func Quantize(ctx context.Context, cfg QuantizeConfig) error {
	if cfg.Budget != "" {
		if cfg.Preset != "" {
			var err error
			if cfg, err = cfg.presetBudget(); err != nil {
				return err
			}
		}
		return quantizeBudget(ctx, cfg)
	}
	r, err := cfg.recipe()
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := checkQuantizePaths(cfg); err != nil {
		return err
	}
	ck, err := source.OpenCheckpoint(cfg.Model)
	if err != nil {
		return err
	}
	defer ck.Close()
	fp, err := ck.Fingerprint()
	if err != nil {
		return err
	}
	if err := r.Plan.CheckModel(fp); err != nil {
		return fmt.Errorf("quantize: plan %s: %w", cfg.Plan, err)
	}
	q := &quantizer{cfg: cfg, r: r, ck: ck, specs: map[string]quant.Spec{}, snr: map[string]*bundle.SNREntry{}}
	items, err := q.items()
	if err != nil {
		return err
	}
	var set *corpus.Set
	if r.NeedsCalib() {
		if set, err = loadCalib(cfg); err != nil {
			return err
		}
	}
	if cfg.EvalTrace != "" {
		if q.evalTrace, err = checkEvalTrace(cfg.EvalTrace, set); err != nil {
			return err
		}
	}
	record, err := q.record(fp, set)
	if err != nil {
		return err
	}
	wd, err := bundle.OpenWork(cfg.Out, record, bundle.WorkOptions{Resume: cfg.Resume, ForgeVersion: Version,
		Damaged: func(path string, err error) {
			if cfg.Log != nil {
				cfg.Log(fmt.Sprintf("resume: %s failed its SHA-256 check (damaged); it is made again", path))
			}
		}})
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	q.wd = wd
	defer wd.Close(false)
	if set != nil {
		err = q.runCalibrated(ctx, set)
	} else {
		err = q.runDirect(ctx)
	}
	if err == nil {
		err = q.assemble(items, fp, record)
	}
	if err != nil {
		if wd.Close(false); wd.Stored() == 0 {
			wd.Close(true) // nothing to resume from
			return err
		}
		return &WorkKeptError{Dir: wd.Dir(), Bytes: wd.Size(), Err: err}
	}
	return wd.Close(true)
}

// refits reports whether the recipe refits codebooks: unless NoRefit, when
// it is calibrated (gptq, AW or a weighted correction).
func (cfg QuantizeConfig) refits() bool {
	return !cfg.NoRefit && (cfg.Method == "gptq" || cfg.AW || cfg.LowRankWeighted || cfg.Reconstruct || cfg.Preset != "")
}

// recipe turns the configuration's settings into a checked plan.Recipe.
func (cfg QuantizeConfig) recipe() (*plan.Recipe, error) {
	r := &plan.Recipe{AW: cfg.AW, Hadamard: cfg.Hadamard, Seed: cfg.Seed, PlanPath: cfg.Plan,
		LowRank: plan.LowRank{Rank: cfg.LowRankRank, Weighted: cfg.LowRankWeighted}}
	var err error
	if r.Method, err = quant.ParseMethod(cfg.Method); err != nil {
		return nil, err
	}
	if cfg.ReconSteps < 0 || cfg.ReconBatch < 0 || cfg.ReconLRLUT < 0 || cfg.ReconLRScale < 0 || cfg.ReconLRRank < 0 {
		return nil, fmt.Errorf("%w: reconstruction steps, batch and learning rates must be > 0", plan.ErrRecipe)
	}
	r.Reconstruct = cfg.reconSettings()
	switch {
	case cfg.ReconRank < 0:
		return nil, fmt.Errorf("%w: reconstruction rank %d is negative", plan.ErrRecipe, cfg.ReconRank)
	case cfg.ReconRank > 0 && !cfg.Reconstruct:
		return nil, fmt.Errorf("%w: a reconstruction rank goes with block reconstruction", plan.ErrRecipe)
	case cfg.ReconRank > 0 && cfg.LowRankRank > 0:
		return nil, fmt.Errorf("%w: a reconstruction rank adds the factors a low-rank rank would: give one of them", plan.ErrRecipe)
	case cfg.ReconRank > 0:
		r.LowRank.Rank = cfg.ReconRank
		r.Reconstruct.Rank = cfg.ReconRank
	}
	if cfg.Preset != "" {
		if err := cfg.applyPreset(r); err != nil {
			return nil, err
		}
	}
	r.Refit = !cfg.NoRefit && r.NeedsCalib()
	if cfg.Format != "" {
		f, err := lut.ParseFormat(cfg.Format)
		if err != nil {
			return nil, fmt.Errorf("format: %w", err)
		}
		r.Format = &f
	}
	if cfg.Plan != "" {
		if r.Plan, err = plan.Read(cfg.Plan); err != nil {
			return nil, err
		}
	}
	for _, name := range cfg.LowRankParts {
		p, ok := model.ParsePart(name)
		if !ok {
			return nil, fmt.Errorf("%w: low-rank parts: unknown part %q (parts: %s)", plan.ErrRecipe, name, plan.QuantPartNames())
		}
		r.LowRank.Parts = append(r.LowRank.Parts, p)
	}
	if cfg.Seq < 0 || cfg.HoldOut < 0 {
		return nil, fmt.Errorf("%w: the calibration row length and held-out row count must not be negative", plan.ErrRecipe)
	}
	return r, r.Check(len(cfg.Calib) > 0)
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
	inputs := append([]string{cfg.Model, cfg.Plan, cfg.EvalTrace}, dataPaths(cfg.Calib)...)
	out := filepath.Clean(cfg.Out)
	for _, p := range []string{bundle.WorkPath(out), out + ".partial"} {
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
		if err := outpath.CheckRemovable(bundle.WorkPath(out), bundle.WorkKind); err != nil {
			return fmt.Errorf("quantize: work directory: %w", err)
		}
	}
	return nil
}
