package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/bundle"
	"forge/checkpoint"
	"forge/corpus"
	"forge/eval"
	"forge/internal/outpath"
	"forge/model"
	"forge/plan"
	"forge/quant"
	"forge/source"
	"forge/tensor"
)

// DefaultSweepCandidates are the candidates a sweep measures when none
// are given: the 2- and 3-bit vector formats, LUT4, INT8 and keeping the
// unit at 16 bits.
const DefaultSweepCandidates = "vector 2x16 + pcs;vector 2x64 + pcs;LUT4 per-tensor + pcs;INT8 per-channel;bf16"

// DefaultSweepRows is how many of the trace's rows a sweep scores when
// not told (docs/quantization.md §4.4 measures what fewer rows cost in
// ranking agreement).
const DefaultSweepRows = 8

// SweepConfig configures Sweep. Zero values are the defaults.
type SweepConfig struct {
	Model string // the reference HF checkpoint
	Trace string // a trace of Model (forge trace) on in-domain text
	Out   string // the measurement file to write
	// Candidates are plan.ParseCandidates spellings separated by ";"
	// ("": DefaultSweepCandidates).
	Candidates string
	Unit       string // matrix, part (the default), layer or band:N
	Head       bool   // measure the head as a unit too
	Rows       int    // trace rows scored (0: DefaultSweepRows)
	// Method, AW, Hadamard, LowRankWeighted, NoRefit, Calib, Seq,
	// HoldOut and Seed are the quantizer's settings, as forge quantize
	// takes them: the plan this sweep feeds is quantized the same way.
	Method          string
	AW, Hadamard    bool
	LowRankWeighted bool
	NoRefit         bool
	Calib           []string
	Seq, HoldOut    int
	Seed            uint64
	// Shard is "" (all the work), "I/N", or "auto/N" / "auto": I from
	// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or
	// SLURM_ARRAY_TASK_ID (an array --array=0-(N-1)), N from
	// SLURM_ARRAY_TASK_COUNT when not given.
	Shard     string
	Resume    bool // continue from OUT.partial and the work directories
	Overwrite bool
	Progress  func(done, total int64) // matrices quantized and measurements made, of all to do
	Log       func(line string)
}

// sweepRun carries one Sweep.
type sweepRun struct {
	cfg    SweepConfig
	r      *plan.Recipe
	ck     *checkpoint.Checkpoint
	tr     *eval.Trace
	set    *corpus.Set
	s      *plan.Sweep // header and measurements so far
	shard  plan.Shard
	record []byte // the recipe's record (work directory identity)

	wds         []*bundle.WorkDir // per candidate, nil when none of its matrices is needed
	cache       [][]tensor.Matrix // [row][layer] the reference's layer inputs (cacheInputs)
	base        []float64         // [row] the reference's mean KL per row
	baseP99     float64           // the reference's 99th percentile of KL
	done, total int64             // progress: matrices made and measurements, of all to do
}

// Sweep measures, for every unit of the model's quantizable matrices and
// every candidate, the unit's stored bytes and the ΔKL of quantizing that
// unit alone (everything else at the reference's precision) on the first
// rows of an in-domain trace (docs/quantization.md §4.4), and writes the
// measurement file cfg.Out (plan.Sweep) that forge plan reads. Each
// matrix is quantized once per candidate (with the reference's inputs'
// statistics: in an ablation they are exactly what the matrix sees) and
// shared by every unit that holds it; each measurement re-runs only the
// layers from the unit's first on, from the reference's hidden states
// cached once. A shard (cfg.Shard) does its slice of the work only.
// Measurements are kept in OUT.partial as they finish, so an interrupted
// sweep resumes with cfg.Resume.
func Sweep(ctx context.Context, cfg SweepConfig) (*plan.Sweep, error) {
	w, err := openSweep(cfg)
	if err != nil {
		return nil, err
	}
	defer w.close()
	m, err := model.Load(w.ck)
	if err != nil {
		return nil, err
	}
	if err := w.cacheInputs(ctx, m); err != nil {
		return nil, err
	}
	res, err := w.score(ctx, m, len(m.Config().Layers))
	if err != nil {
		return nil, fmt.Errorf("sweep: the reference: %w", err)
	}
	w.base = rowMeans(res.KL, res.RowPositions)
	dkl, _, p99, top1 := measurement(res, make([]float64, len(w.base)))
	w.s.Base, w.baseP99 = plan.SweepBase{KL: dkl, Top1: top1}, p99
	if err := w.resume(); err != nil {
		return nil, err
	}
	if err := w.quantize(ctx, m); err != nil {
		return nil, err
	}
	if err := w.measure(ctx, m); err != nil {
		return nil, err
	}
	s := w.s
	if w.shard.N == 1 {
		s.Shard = nil
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if err := plan.WriteSweep(cfg.Out, s); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	os.Remove(partialPath(cfg.Out))
	for ci, wd := range w.wds {
		if wd != nil {
			wd.Close(true)
			w.wds[ci] = nil
		}
	}
	return s, nil
}

// partialPath is where a sweep keeps its measurements so far.
func partialPath(out string) string { return filepath.Clean(out) + ".partial" }

// openSweep checks the settings and inputs and builds the header: nothing
// is computed before every setting is known to be good.
func openSweep(cfg SweepConfig) (*sweepRun, error) {
	w := &sweepRun{cfg: cfg}
	if cfg.Candidates == "" {
		cfg.Candidates = DefaultSweepCandidates
	}
	if cfg.Unit == "" {
		cfg.Unit = "part"
	}
	if cfg.Rows == 0 {
		cfg.Rows = DefaultSweepRows
	}
	w.cfg = cfg
	cands, err := plan.ParseCandidates(cfg.Candidates)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if cfg.LowRankWeighted && !slices.ContainsFunc(cands, func(c plan.Candidate) bool { return c.Rank > 0 }) {
		return nil, fmt.Errorf("sweep: a Hessian-weighted low-rank correction needs a candidate with a rank (\"FORMAT, rank N\")")
	}
	if _, err := plan.ParseUnitKind(cfg.Unit); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if cfg.Rows < 2 {
		return nil, fmt.Errorf("sweep: %d trace rows: at least 2 are needed for a standard error", cfg.Rows)
	}
	if w.shard, err = resolveShard(cfg.Shard); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if w.r, err = sweepRecipe(cfg); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if err := checkOutputs(cfg.Overwrite, append([]string{cfg.Model, cfg.Trace}, dataPaths(cfg.Calib)...),
		outpath.Target{Path: cfg.Out, Owned: outpath.ForgeJSON}); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	// OUT.partial is the sweep's own state: replaced when forge wrote it,
	// never when it is someone else's file.
	if err := outpath.Check(outpath.Target{Path: partialPath(cfg.Out), Owned: outpath.ForgeJSON}, true); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	if w.ck, err = source.OpenCheckpoint(cfg.Model); err != nil {
		return nil, err
	}
	fp, err := w.ck.Fingerprint()
	if err != nil {
		return nil, err
	}
	c, err := w.ck.Config()
	if err != nil {
		return nil, err
	}
	if w.tr, err = eval.OpenTrace(cfg.Trace); err != nil {
		return nil, err
	}
	if err := w.tr.CheckVocab(c.Vocab); err != nil {
		return nil, err
	}
	if w.tr.Meta.Fingerprint != fp {
		return nil, fmt.Errorf("sweep: the trace %s was recorded from another model (fingerprint %.12s…) than %s (%.12s…)",
			cfg.Trace, w.tr.Meta.Fingerprint, cfg.Model, fp)
	}
	rows := min(cfg.Rows, w.tr.Rows())
	if rows < 2 {
		return nil, fmt.Errorf("sweep: the trace %s has %d row: at least 2 are needed", cfg.Trace, w.tr.Rows())
	}
	positions := 0
	for _, n := range w.tr.RowPositions()[:rows] {
		positions += n
	}
	units, err := plan.Units(&c, cfg.Unit, cfg.Head)
	if err != nil {
		return nil, err
	}
	for _, u := range units {
		for _, cd := range cands {
			if _, err := u.Bytes(cd); err != nil {
				return nil, fmt.Errorf("sweep: candidate %s cannot hold unit %s: %w", cd, u.Key, err)
			}
		}
	}
	if w.r.NeedsCalib() {
		if w.set, err = loadCalib(QuantizeConfig{Model: cfg.Model, Calib: cfg.Calib, Seq: cfg.Seq, Seed: cfg.Seed}); err != nil {
			return nil, err
		}
		if _, err := checkEvalTrace(cfg.Trace, w.set); err != nil {
			return nil, err
		}
	}
	var calibRecipe any
	held := 0
	if w.set != nil {
		calibRecipe, held = w.set.Recipe(), sweepHoldOut(cfg.HoldOut, len(w.set.Rows))
	}
	if w.record, err = w.r.Record(fp, Version, calibRecipe, held); err != nil {
		return nil, err
	}
	if cfg.LowRankWeighted { // the ranks are the candidates'
		var rec map[string]any
		if err := json.Unmarshal(w.record, &rec); err != nil {
			return nil, err
		}
		rec["lowrank"] = map[string]any{"weighted": true}
		if w.record, err = json.Marshal(rec); err != nil {
			return nil, err
		}
	}
	sum, err := fileSHA256(cfg.Trace)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	w.s = &plan.Sweep{Version: plan.SweepVersion, ForgeVersion: Version,
		Model:    plan.SweepSource{Path: abs(cfg.Model), Fingerprint: fp},
		Trace:    plan.SweepTrace{Path: abs(cfg.Trace), SHA256: sum, Rows: rows, Positions: positions},
		UnitKind: cfg.Unit, Candidates: cands, Recipe: w.record, Units: units,
		FixedBytes: fixedBytes(w.ck, units), Shard: &w.shard}
	ok = true
	return w, nil
}

// sweepRecipe is the quantizer's recipe for cfg's settings; each
// candidate is its plan default (Recipe.Spec).
func sweepRecipe(cfg SweepConfig) (*plan.Recipe, error) {
	method, err := quant.ParseMethod(cfg.Method)
	if err != nil {
		return nil, err
	}
	// Checked with a stand-in default and rank: the candidates carry the
	// formats and ranks (openSweep checks a weighted correction has one).
	r := &plan.Recipe{Plan: &plan.Plan{Default: &plan.Spec{}}, Method: method, AW: cfg.AW,
		Hadamard: cfg.Hadamard, LowRank: plan.LowRank{Weighted: cfg.LowRankWeighted}, Seed: cfg.Seed}
	if cfg.LowRankWeighted {
		r.LowRank.Rank = 1
	}
	r.Refit = !cfg.NoRefit && r.NeedsCalib()
	if err := r.Check(len(cfg.Calib) > 0); err != nil {
		return nil, err
	}
	r.LowRank.Rank, r.Plan = 0, nil
	return r, nil
}

// sweepHoldOut is the number of calibration rows held out of n (as
// forge quantize holds them out).
func sweepHoldOut(holdOut, n int) int {
	if holdOut > 0 {
		return min(holdOut, n-1)
	}
	return max(1, n/12)
}

// resolveShard reads "", "I/N", "auto" or "auto/N".
func resolveShard(s string) (plan.Shard, error) {
	if s == "" {
		return plan.Shard{I: 0, N: 1}, nil
	}
	rest, auto := strings.CutPrefix(s, "auto")
	if !auto {
		return plan.ParseShard(s)
	}
	n := os.Getenv("SLURM_ARRAY_TASK_COUNT")
	if r, ok := strings.CutPrefix(rest, "/"); ok {
		n = r
	} else if rest != "" {
		return plan.Shard{}, fmt.Errorf("shard %q: want auto or auto/N", s)
	}
	i := os.Getenv("JOB_COMPLETION_INDEX")
	if i == "" {
		// The task id itself, not id − SLURM_ARRAY_TASK_MIN: a re-run of
		// one task (sbatch --array=3) has MIN 3 and must still be shard 3.
		i = os.Getenv("SLURM_ARRAY_TASK_ID")
	}
	if i == "" || n == "" {
		return plan.Shard{}, fmt.Errorf("shard auto: the index (JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID) or the count (auto/N or SLURM_ARRAY_TASK_COUNT) is not set")
	}
	return plan.ParseShard(i + "/" + n)
}

// fixedBytes is what a bundle stores outside the units, at the source's
// dtype: every tensor of the model that no unit holds.
func fixedBytes(ck *checkpoint.Checkpoint, units []plan.Unit) int64 {
	in := map[string]bool{}
	for _, u := range units {
		for _, n := range u.Names {
			in[n] = true
		}
	}
	var n int64
	for _, t := range ck.Tensors() {
		if !in[t.Spec.Name] {
			n += t.Bytes
		}
	}
	return n
}

// fileSHA256 is the hex SHA-256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// resume takes the measurements of OUT.partial when cfg.Resume is set and
// it measured the same thing; without Resume any partial file is
// replaced.
func (w *sweepRun) resume() error {
	p := partialPath(w.cfg.Out)
	if !w.cfg.Resume {
		return nil
	}
	old, err := plan.ReadSweep(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep: resume: %w (remove it to start afresh)", err)
	}
	if err := w.s.Same(old); err != nil || old.Shard == nil || *old.Shard != w.shard {
		return fmt.Errorf("sweep: resume: %s measured something else (%v; shard %v); remove it to start afresh", p, err, old.Shard)
	}
	w.s.Measurements = old.Measurements
	return nil
}

// savePartial writes the measurements so far to OUT.partial.
func (w *sweepRun) savePartial() error {
	return plan.WriteSweep(partialPath(w.cfg.Out), w.s)
}

func (w *sweepRun) close() {
	for _, wd := range w.wds {
		if wd != nil {
			wd.Close(false)
		}
	}
	if w.tr != nil {
		w.tr.Close()
	}
	if w.ck != nil {
		w.ck.Close()
	}
}

func (w *sweepRun) log(format string, args ...any) {
	if w.cfg.Log != nil {
		w.cfg.Log(fmt.Sprintf(format, args...))
	}
}

// MergeConfig configures MergeSweeps.
type MergeConfig struct {
	Shards    []string // measurement files of forge sweep --shard I/N, every I of one N
	Out       string   // the merged file
	Overwrite bool
}

// MergeSweeps reads the shards of a sweep, checks they are complete,
// consistent (same model, trace rows, units, candidates, recipe) and
// disjoint with every index present (plan.MergeSweeps), and writes the
// whole measurement file cfg.Out.
func MergeSweeps(cfg MergeConfig) (*plan.Sweep, error) {
	if err := checkOutputs(cfg.Overwrite, cfg.Shards, outpath.Target{Path: cfg.Out, Owned: outpath.ForgeJSON}); err != nil {
		return nil, fmt.Errorf("sweep merge: %w", err)
	}
	parts := make([]*plan.Sweep, len(cfg.Shards))
	for i, p := range cfg.Shards {
		s, err := plan.ReadSweep(p)
		if err != nil {
			return nil, fmt.Errorf("sweep merge: %w", err)
		}
		parts[i] = s
	}
	s, err := plan.MergeSweeps(parts)
	if err != nil {
		return nil, fmt.Errorf("sweep merge: %w", err)
	}
	if err := plan.WriteSweep(cfg.Out, s); err != nil {
		return nil, fmt.Errorf("sweep merge: %w", err)
	}
	return s, nil
}
