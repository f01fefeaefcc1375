package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"forge"
	"forge/internal/progress"
	"forge/internal/table"
	"forge/plan"
)

// SweepGroup is `forge sweep` (measure) and `forge sweep merge`.
type SweepGroup struct {
	Measure SweepCmd      `cmd:"" default:"withargs" help:"Measure each unit's ΔKL and bytes in each candidate format (the default: forge sweep --model M --trace T --out S.json)."`
	Merge   SweepMergeCmd `cmd:"" help:"Merge the shards of a sweep (forge sweep --shard I/N) into one measurement file, checking they are complete, consistent and disjoint."`
}

// SweepCmd is `forge sweep --model M --trace T --out S.json`.
type SweepCmd struct {
	Model           string   `required:"" type:"path" help:"Reference Hugging Face checkpoint."`
	Trace           string   `required:"" type:"path" help:"A trace of the reference on in-domain text (forge trace); its first --rows rows are scored."`
	Out             string   `required:"" help:"Measurement file to write (JSON)."`
	Formats         []string `sep:";" placeholder:"CANDIDATE" help:"Candidates, separated by ';' or repeated: a format name, or \"FORMAT, rank N\" with a low-rank correction; bf16 keeps the unit (default: ${sweep_candidates})."`
	Unit            string   `default:"part" help:"How matrices are grouped: matrix, part (mlp, mixer, attn, kv of each layer), layer, or band:N (N consecutive layers)."`
	Head            bool     `help:"Measure the head as a unit too."`
	Rows            int      `default:"${sweep_rows}" help:"Trace rows scored (at least 2)."`
	Method          string   `default:"rtn" enum:"rtn,gptq" help:"Quantization method, as forge quantize will use it: rtn or gptq (needs --calib)."`
	AW              bool     `name:"aw" help:"Activation-weighted codebooks (needs --calib)."`
	Hadamard        bool     `help:"Online block Hadamard rotation of the MLP inputs."`
	Calib           []string `placeholder:"FILE:ROWS" help:"Calibration sources for gptq / --aw, as forge quantize takes them; they must not overlap the trace."`
	Ctx             int      `default:"${calib_ctx}" aliases:"seq" help:"Tokens per calibration row."`
	HoldOut         int      `name:"holdout" help:"Calibration rows held out (default max(1, rows/12))."`
	LowRankWeighted bool     `name:"lowrank-weighted" help:"Fit the candidates' low-rank corrections weighted by the calibration Hessian."`
	NoRefit         bool     `name:"no-refit" help:"Do not refit the candidates' codebooks and scales to the calibration Hessian (as forge quantize --no-refit)."`
	Seed            uint64   `default:"0" help:"Seed for calibration sampling and k-means."`
	Shard           string   `placeholder:"I/N" help:"Measure only slice I of N of the work (0-based); auto/N reads I from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID."`
	Resume          bool     `help:"Continue an interrupted sweep from OUT.partial and its work directories (same settings required)."`
	Overwrite       bool     `help:"Replace an existing measurement file at --out."`
	JSON            bool     `name:"json" help:"Print the measurement file's JSON instead of a table."`

	Emit        string `placeholder:"KIND" help:"Print a job that runs this sweep as --shards tasks on a cluster, and exit (nothing is measured): k8s-job (a Kubernetes Indexed Job manifest) or slurm (an sbatch job-array script). --out names the merged file; task I writes OUT.shard-I.json (see docs/sweeps.md)."`
	Shards      int    `placeholder:"N" help:"With --emit: the number of tasks; task I measures slice I of N."`
	Image       string `help:"With --emit k8s-job: the container image that holds forge on its PATH."`
	VolumeClaim string `name:"volume-claim" placeholder:"NAME" help:"With --emit k8s-job: the PersistentVolumeClaim holding the model, trace and outputs (default forge-data)."`
	Mount       string `placeholder:"DIR" help:"With --emit k8s-job: where each pod mounts the claim; every path given must be under it (default /data)."`
	CPUs        int    `name:"cpus" help:"With --emit: CPUs per task (default 8)."`
	Memory      string `placeholder:"SIZE" help:"With --emit: memory per task, e.g. 64GiB (the default) or 500000MiB."`
	Time        string `help:"With --emit slurm: the time limit, as sbatch --time takes it (default the partition's)."`
	JobName     string `name:"job-name" help:"With --emit: the job's name (default forge-sweep)."`
}

// config is the sweep the flags describe.
func (c *SweepCmd) config() forge.SweepConfig {
	return forge.SweepConfig{
		Model: c.Model, Trace: c.Trace, Out: c.Out, Candidates: strings.Join(trimList(c.Formats), ";"), Unit: c.Unit,
		Head: c.Head, Rows: c.Rows, Method: c.Method, AW: c.AW, Hadamard: c.Hadamard, LowRankWeighted: c.LowRankWeighted, NoRefit: c.NoRefit,
		Calib: trimList(c.Calib), Seq: c.Ctx, HoldOut: c.HoldOut, Seed: c.Seed,
		Shard: c.Shard, Resume: c.Resume, Overwrite: c.Overwrite,
	}
}

// sweepArgs is the command line that runs s: the one place that turns a
// sweep's settings back into this command's flags (forge.EmitSweep's
// Args). Values are given as --flag=VALUE, so one starting with '-' is
// not taken for a flag; a ',' in a calibration spec is escaped, as the
// list flag splits on it.
func sweepArgs(s forge.SweepConfig) []string {
	a := []string{"forge", "sweep", "--model=" + s.Model, "--trace=" + s.Trace, "--out=" + s.Out}
	opt := func(flag, v string, set bool) {
		if set {
			a = append(a, flag+"="+v)
		}
	}
	opt("--formats", s.Candidates, s.Candidates != "")
	opt("--unit", s.Unit, s.Unit != "")
	opt("--rows", strconv.Itoa(s.Rows), s.Rows != 0)
	opt("--method", s.Method, s.Method != "")
	for _, c := range s.Calib {
		a = append(a, "--calib="+strings.ReplaceAll(c, ",", `\,`))
	}
	opt("--ctx", strconv.Itoa(s.Seq), s.Seq != 0)
	opt("--holdout", strconv.Itoa(s.HoldOut), s.HoldOut != 0)
	opt("--seed", strconv.FormatUint(s.Seed, 10), s.Seed != 0)
	opt("--shard", s.Shard, s.Shard != "")
	for _, f := range []struct {
		flag string
		on   bool
	}{{"--head", s.Head}, {"--aw", s.AW}, {"--hadamard", s.Hadamard}, {"--lowrank-weighted", s.LowRankWeighted},
		{"--no-refit", s.NoRefit}, {"--resume", s.Resume}, {"--overwrite", s.Overwrite}} {
		if f.on {
			a = append(a, f.flag)
		}
	}
	return a
}

// emit prints the job that --emit asks for.
func (c *SweepCmd) emit() error {
	if c.Shards < 1 {
		return fmt.Errorf("--emit needs --shards N with N at least 1 (got %d)", c.Shards)
	}
	if c.Shard != "" {
		return fmt.Errorf("--shard %s: the emitted job gives each task its own shard; leave --shard out", c.Shard)
	}
	var mem int64
	if c.Memory != "" {
		var err error
		if mem, err = parseSize(c.Memory); err != nil {
			return fmt.Errorf("--memory %w", err)
		}
	}
	text, err := forge.EmitSweep(forge.EmitConfig{
		Kind: c.Emit, Shards: c.Shards, Sweep: c.config(), Args: sweepArgs,
		Image: c.Image, VolumeClaim: c.VolumeClaim, Mount: c.Mount, Time: c.Time,
		CPUs: c.CPUs, Memory: mem, JobName: c.JobName,
	})
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(text)
	return err
}

func (c *SweepCmd) Run(ctx context.Context) error {
	if err := positive("--ctx", c.Ctx); err != nil {
		return err
	}
	if c.Rows < 2 || c.HoldOut < 0 {
		return fmt.Errorf("--rows must be at least 2 and --holdout not negative")
	}
	if c.Emit != "" {
		return c.emit()
	}
	if c.Shards != 0 || c.Image != "" || c.VolumeClaim != "" || c.Mount != "" || c.CPUs != 0 || c.Memory != "" || c.Time != "" || c.JobName != "" {
		return fmt.Errorf("--shards, --image, --volume-claim, --mount, --cpus, --memory, --time and --job-name describe the job that --emit prints; without --emit, use --shard I/N")
	}
	cfg := c.config()
	cfg.Progress = progress.New("sweep", false).Set
	cfg.Log = func(line string) { fmt.Fprintln(os.Stderr, line) }
	s, err := forge.Sweep(ctx, cfg)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(s)
	}
	if err := sweepTable(s).Write(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("reference KL %.3g, top-1 %.2f%% on %d rows (%d positions); wrote %s\n",
		s.Base.KL, 100*s.Base.Top1, s.Trace.Rows, s.Trace.Positions, c.Out)
	return nil
}

// sweepTable lays a sweep's measurements out: one row per unit and
// candidate.
func sweepTable(s *plan.Sweep) *table.Table {
	t := table.New("unit", "candidate", "bytes", "bpw", "ΔKL", "± se", "p99 KL", "top-1").AlignRight(2, 3, 4, 5, 6, 7)
	params := map[string]int64{}
	for _, u := range s.Units {
		params[u.Key] = u.Params
	}
	for _, m := range s.Measurements {
		t.Row(m.Unit, m.Candidate.String(), fmt.Sprint(m.Bytes), fmt.Sprintf("%.3f", 8*float64(m.Bytes)/float64(params[m.Unit])),
			fmt.Sprintf("%.5f", m.DKL), fmt.Sprintf("%.5f", m.SE), fmt.Sprintf("%.4f", m.P99), fmt.Sprintf("%.2f%%", 100*m.Top1))
	}
	return t
}

// SweepMergeCmd is `forge sweep merge --out S.json SHARD…`.
type SweepMergeCmd struct {
	Shards    []string `arg:"" type:"existingfile" help:"The shards' measurement files (every I of one N)."`
	Out       string   `required:"" help:"Merged measurement file to write."`
	Overwrite bool     `help:"Replace an existing file at --out."`
}

func (c *SweepMergeCmd) Run(ctx context.Context) error {
	s, err := forge.MergeSweeps(forge.MergeConfig{Shards: c.Shards, Out: c.Out, Overwrite: c.Overwrite})
	if err != nil {
		return err
	}
	fmt.Printf("merged %d shards: %d measurements of %d units × %d candidates; wrote %s\n",
		len(c.Shards), len(s.Measurements), len(s.Units), len(s.Candidates), c.Out)
	return nil
}
