package main

import (
	"context"
	"fmt"
	"math"
	"os"

	"forge"
	"forge/ane"
	"forge/internal/progress"
	"forge/internal/table"
)

// NumericsCmd is `forge numerics`.
type NumericsCmd struct {
	Model          string `required:"" type:"existingdir" help:"Bundle or checkpoint to emulate (its own weights are the fp32 reference)."`
	Trace          string `required:"" type:"existingfile" help:"Trace whose token rows are run (forge trace)."`
	Fix            string `default:"none" help:"fp16 workarounds of the emulation shown in detail, comma-separated: tanh-silu, stable-softplus, gdn-scale, mlp-down-scale (rejected by the reference: it overflows), none or recommended (the first three)."`
	AttBlock       int    `name:"att-block" placeholder:"N" help:"Split attention's keys into blocks of N (one global max, sums combined), as a device graph does at long contexts (0: one block)."`
	LayersPerChunk int    `name:"layers-per-chunk" default:"4" help:"Layers per chunk of the device build (chunks are also run alone, fed the fp32 stream)."`
	Rows           int    `default:"4" help:"Trace rows to run."`
	Tokens         int    `placeholder:"N" help:"Run only the first N tokens of each row (0: whole rows)."`
	Only           bool   `help:"Measure only the --fix emulation (by default also: no fix, each recommended fix alone, all of them)."`
	JSON           string `name:"json" placeholder:"FILE" help:"Also write the report as JSON."`
	Plot           string `placeholder:"STEM" help:"Also draw each emulation's error by layer to STEM.png and STEM.svg."`
	Overwrite      bool   `help:"Replace a report or figure that forge wrote earlier."`
}

func (c *NumericsCmd) Run(ctx context.Context) error {
	fixes, err := ane.ParseFixes(c.Fix)
	if err != nil {
		return fmt.Errorf("--fix: %w", err)
	}
	if c.Rows < 1 || c.LayersPerChunk < 1 || c.AttBlock < 0 || c.Tokens < 0 {
		return fmt.Errorf("--rows and --layers-per-chunk must be at least 1, --att-block and --tokens not negative")
	}
	bar := progress.New("numerics", false)
	rep, err := forge.Numerics(ctx, forge.NumericsConfig{Model: c.Model, Trace: c.Trace, Rows: c.Rows, Tokens: c.Tokens,
		Fixes: fixes, AttBlock: c.AttBlock, LayersPerChunk: c.LayersPerChunk, Only: c.Only, JSON: c.JSON, Plot: c.Plot,
		Overwrite: c.Overwrite, Progress: func(done, total int) { bar.Set(int64(done), int64(total)) },
		Log: func(line string) { fmt.Fprintln(os.Stderr, line) }})
	if err != nil {
		return err
	}
	fmt.Printf("fp16 emulation (%s) of %s against its fp32 forward, %d rows, %d tokens\n\n", rep.Selected, c.Model, rep.Rows, rep.Tokens)
	if err := numericsLayers(rep).Write(os.Stdout); err != nil {
		return err
	}
	fmt.Println()
	if err := numericsChunks(rep).Write(os.Stdout); err != nil {
		return err
	}
	fmt.Println()
	if err := numericsConfigs(rep).Write(os.Stdout); err != nil {
		return err
	}
	for _, f := range []string{c.JSON} {
		if f != "" {
			fmt.Printf("wrote %s\n", f)
		}
	}
	if c.Plot != "" {
		for _, f := range forge.NumericsPlotFiles(c.Plot) {
			fmt.Printf("wrote %s\n", f)
		}
	}
	return nil
}

// num formats an error measure (— when it is not finite).
func num(v ane.Num, format string) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "—"
	}
	return fmt.Sprintf(format, float64(v))
}

func numericsLayers(r *forge.NumericsReport) *table.Table {
	t := table.New("layer", "kind", "rel L2", "cosine", "median tok", "Q1", "Q2", "Q3", "Q4", "share of update", "overflow", "subnormal", "max |x|", "worst site").
		AlignRight(0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	for _, l := range r.Layers {
		worst, frac := "", 0.0
		for _, s := range l.Sites {
			if s.SubnormalFrac > frac {
				worst, frac = fmt.Sprintf("%s %.1f%% subnormal", s.Site, 100*s.SubnormalFrac), s.SubnormalFrac
			}
		}
		for _, s := range l.Sites {
			if s.Overflow > 0 {
				worst = fmt.Sprintf("%s %d overflow", s.Site, s.Overflow)
				break
			}
		}
		t.Row(l.Layer, l.Kind, num(l.RelL2, "%.4f"), num(l.Cosine, "%.6f"), num(l.MedianRel, "%.4f"),
			num(l.Quarters[0], "%.4f"), num(l.Quarters[1], "%.4f"), num(l.Quarters[2], "%.4f"), num(l.Quarters[3], "%.4f"),
			num(l.Share, "%.4f"), l.Overflow, fmt.Sprintf("%.2f%%", 100*l.SubnormalFrac), fmt.Sprintf("%.4g", l.MaxAbs), worst)
	}
	return t
}

func numericsChunks(r *forge.NumericsReport) *table.Table {
	t := table.New("chunk", "layers", "rel L2 (inherited)", "rel L2 (isolated)", "cosine (isolated)", "share of update (isolated)").AlignRight(0, 2, 3, 4, 5)
	for _, c := range r.Chunks {
		t.Row(c.Chunk, fmt.Sprintf("%d–%d", c.First, c.Last), num(c.Inherited.RelL2, "%.4f"), num(c.Isolated.RelL2, "%.4f"),
			num(c.Isolated.Cosine, "%.6f"), num(c.Isolated.Share, "%.4f"))
	}
	return t
}

func numericsConfigs(r *forge.NumericsReport) *table.Table {
	t := table.New("emulation", "mean KL", "p99 KL", "top-1", "ppl fp32", "ppl fp16", "worst layer rel L2", "overflow", "non-finite").AlignRight(1, 2, 3, 4, 5, 6, 7, 8)
	for _, c := range r.Configs {
		var worst ane.Num
		var ovf int64
		for _, l := range c.Layers {
			if v := l.RelL2; math.IsNaN(float64(v)) || v > worst {
				worst = v
			}
			ovf += l.Overflow
		}
		label := c.Label
		if label == r.Selected {
			label += " *"
		}
		e := c.EndToEnd
		t.Row(label, num(e.MeanKL, "%.3g"), num(e.P99KL, "%.3g"), num(e.Top1*100, "%.2f%%"), num(e.PPLRef, "%.4f"), num(e.PPL, "%.4f"),
			num(worst, "%.4f"), ovf, e.NonFinite)
	}
	return t
}
