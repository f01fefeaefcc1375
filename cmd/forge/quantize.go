package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"forge"
	"forge/internal/progress"
)

// QuantizeCmd is `forge quantize`.
type QuantizeCmd struct {
	Model           string   `required:"" type:"existingdir" help:"Hugging Face checkpoint directory."`
	Out             string   `required:"" help:"Bundle directory to create."`
	Format          string   `help:"Default format of every quantizable matrix, e.g. \"LUT4 per-tensor + pcs\", \"vector 2x16 + pcs\", \"LUT4 g128 + pcs\", \"INT8 per-channel\", \"bf16\"."`
	Plan            string   `type:"existingfile" help:"Plan JSON: per-part defaults and per-matrix formats and ranks (see package plan)."`
	Preset          string   `enum:"4bit,3bit,2bit," default:"" help:"A whole ANE-native recipe by name (needs --calib; no --format or --plan): 4bit (LUT4 blocks), 3bit (LUT3), 2bit (vector 2x16); each GPTQ + activation-weighted codebooks + Hadamard + refit, with the head in INT8. With --budget the planner picks each block matrix's format from vector 2x16 to INT8 instead (the head stays INT8, outside the budget; README: Presets)."`
	Method          string   `default:"rtn" enum:"rtn,gptq" help:"Quantization method: rtn (nearest rounding) or gptq (needs --calib)."`
	AW              bool     `name:"aw" help:"Activation-weighted codebooks: k-means weighted by diag(H) (needs --calib)."`
	Hadamard        bool     `help:"Online block Hadamard rotation of the MLP inputs (seeds 1000+layer, 2000+layer)."`
	Calib           []string `placeholder:"FILE:ROWS" help:"Calibration sources, comma-separated or repeated: .txt text, .jsonl chat, .json/.npy token rows; ROWS rows sampled with --seed."`
	EvalTrace       string   `name:"eval-trace" type:"existingfile" placeholder:"TRACE" help:"The trace the bundle will be evaluated on: calibration rows that share a window of 64 tokens with its rows are refused before any work; recorded in the manifest."`
	Ctx             int      `default:"${calib_ctx}" aliases:"seq" help:"Tokens per calibration row."`
	HoldOut         int      `name:"holdout" help:"Calibration rows held out for the per-matrix SNR (default max(1, rows/12))."`
	LowRankRank     int      `name:"lowrank-rank" help:"Rank of the low-rank correction of the quantization error (0: none)."`
	LowRankParts    []string `name:"lowrank-parts" help:"Parts that get the correction, comma-separated or repeated: gdn, attn, kv, mlp, head (default gdn,attn,kv)."`
	LowRankWeighted bool     `name:"lowrank-weighted" help:"Fit the correction weighted by the calibration Hessian."`
	NoRefit         bool     `name:"no-refit" help:"Do not refit the codebooks and scales to the calibration Hessian after rounding (by default a calibrated recipe refits every quantized matrix and keeps the refit where its held-out SNR rises)."`
	Reconstruct     bool     `help:"Block reconstruction: after a layer's matrices are quantized, fit its codebook values, scales and low-rank factors (indices fixed) by Adam so that the layer, fed the quantized stream, reproduces the reference stream; kept only where the held-out loss drops (needs --calib)."`
	ReconRank       int      `name:"recon-rank" help:"With --reconstruct: give the matrices of --lowrank-parts (default gdn,attn,kv) rank-R factors, started from the SVD of their quantization error, for the reconstruction to train (instead of --lowrank-rank; they add to the size)."`
	ReconSteps      int      `name:"recon-steps" default:"100" help:"With --reconstruct: Adam steps per layer."`
	ReconBatch      int      `name:"recon-batch" default:"2" help:"With --reconstruct: calibration rows per step."`
	ReconLRLUT      float64  `name:"recon-lr-lut" default:"1e-3" help:"With --reconstruct: codebook learning rate."`
	ReconLRScale    float64  `name:"recon-lr-scale" default:"1e-3" help:"With --reconstruct: log-scale learning rate."`
	ReconLRRank     float64  `name:"recon-lr-rank" default:"1e-4" help:"With --reconstruct: low-rank factor learning rate."`
	ReconTarget     string   `name:"recon-target" default:"stream" enum:"stream,local" help:"With --reconstruct: stream (the reference model's hidden states; corrects inherited error) or local (the reference layer on the quantized stream)."`
	Seed            uint64   `default:"0" help:"Seed for calibration sampling, k-means and the randomized SVD."`
	Budget          string   `placeholder:"SIZE" help:"Choose the plan for a size budget instead of --format/--plan: 2.6bpw (over the swept matrices) or the bundle's size (3.1GiB, 850MB). Runs sweep → plan → quantize → gate; needs --eval-trace, and --trace or --sweep."`
	Sweep           string   `type:"existingfile" placeholder:"S.json" help:"With --budget: reuse this measurement file (forge sweep, made with the same settings) instead of sweeping."`
	Trace           string   `type:"existingfile" placeholder:"TRACE" help:"With --budget: the in-domain trace the sweep measures on (not the --eval-trace)."`
	Formats         []string `sep:";" placeholder:"CANDIDATE" help:"With --budget: the sweep's candidates, separated by ';' (default: ${sweep_candidates})."`
	Unit            string   `help:"With --budget: the sweep's unit: matrix, part (default), layer or band:N."`
	Rows            int      `help:"With --budget: trace rows the sweep scores (default ${sweep_rows})."`
	Objective       string   `enum:"mean,p99," default:"" help:"With --budget: what the planner minimizes: mean (default) or p99 ΔKL."`
	Resume          bool     `help:"Continue an interrupted run from OUT.work (same settings required)."`
	Overwrite       bool     `help:"Replace an existing bundle at --out."`
}

func (c *QuantizeCmd) Run(ctx context.Context) error {
	if err := positive("--ctx", c.Ctx); err != nil {
		return err
	}
	if c.HoldOut < 0 || c.LowRankRank < 0 || c.ReconRank < 0 {
		return fmt.Errorf("--holdout, --lowrank-rank and --recon-rank must not be negative")
	}
	if c.Budget == "" && (c.Sweep != "" || c.Trace != "" || len(c.Formats) > 0 || c.Unit != "" || c.Rows != 0 || c.Objective != "") {
		return fmt.Errorf("--sweep, --trace, --formats, --unit, --rows and --objective go with --budget")
	}
	if c.Rows < 0 {
		return fmt.Errorf("--rows must not be negative")
	}
	if c.ReconSteps <= 0 || c.ReconBatch <= 0 {
		return fmt.Errorf("--recon-steps and --recon-batch must be > 0")
	}
	for _, lr := range []struct {
		flag string
		v    float64
	}{{"--recon-lr-lut", c.ReconLRLUT}, {"--recon-lr-scale", c.ReconLRScale}, {"--recon-lr-rank", c.ReconLRRank}} {
		if !(lr.v > 0) || math.IsInf(lr.v, 0) {
			return fmt.Errorf("%s %v: a learning rate must be a finite number > 0", lr.flag, lr.v)
		}
	}
	err := forge.Quantize(ctx, forge.QuantizeConfig{
		Budget: c.Budget, Sweep: c.Sweep, SweepTrace: c.Trace, SweepCandidates: strings.Join(trimList(c.Formats), ";"),
		SweepUnit: c.Unit, SweepRows: c.Rows, Objective: c.Objective,
		Model: c.Model, Out: c.Out, Format: c.Format, Plan: c.Plan, Preset: c.Preset, Method: c.Method, AW: c.AW,
		Hadamard: c.Hadamard, Calib: trimList(c.Calib), EvalTrace: c.EvalTrace, Seq: c.Ctx, HoldOut: c.HoldOut,
		LowRankRank: c.LowRankRank, LowRankParts: trimList(c.LowRankParts), LowRankWeighted: c.LowRankWeighted, NoRefit: c.NoRefit,
		Reconstruct: c.Reconstruct, ReconRank: c.ReconRank, ReconSteps: c.ReconSteps, ReconBatch: c.ReconBatch, ReconLRLUT: c.ReconLRLUT,
		ReconLRScale: c.ReconLRScale, ReconLRRank: c.ReconLRRank, ReconTarget: c.ReconTarget,
		Seed: c.Seed, Resume: c.Resume, Overwrite: c.Overwrite,
		Progress: progress.New("quantize", false).Set,
		Log:      func(line string) { fmt.Fprintln(os.Stderr, line) },
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", c.Out)
	return nil
}
