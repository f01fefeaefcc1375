package forge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"forge/ane"
	"forge/eval"
	"forge/eval/compare"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/model"
	"forge/source"
)

// NumericsConfig configures Numerics. The zero value of each option is
// its default.
type NumericsConfig struct {
	Model string // a bundle or checkpoint
	Trace string // a trace whose token rows are run (forge trace)
	// Rows is how many of the trace's rows to run (0: 4; at most all).
	Rows int
	// Tokens caps the tokens of each row (0: the whole row).
	Tokens int
	// Fixes are the fp16 workarounds of the emulation reported in detail
	// (nil: none, the naive device graph).
	Fixes []ane.Fix
	// AttBlock splits attention's keys into blocks of this many (0: one).
	AttBlock int
	// LayersPerChunk groups layers into chunks (0: 4).
	LayersPerChunk int
	// Only measures the detailed emulation alone; by default Numerics
	// also measures no fix, each recommended fix alone and all of them,
	// to show which matter.
	Only bool
	JSON string // optional: the report as JSON
	// Plot, if set, is the stem of a figure of each emulation's error by
	// layer: Plot.png and Plot.svg.
	Plot      string
	Overwrite bool // replace a report or figure forge wrote earlier
	// Progress, if set, is called after each (row, emulation).
	Progress func(done, total int)
	// Log, if set, receives warnings.
	Log func(string)
}

// NumericsReport is Numerics' result: the emulation the user asked for
// (Selected) in detail — per layer, per chunk, end to end — and every
// emulation measured (Configs, the selected one among them).
type NumericsReport struct {
	Model          string             `json:"model"`
	Trace          string             `json:"trace"`
	Rows           int                `json:"rows"`
	Tokens         int                `json:"tokens"`
	LayersPerChunk int                `json:"layers_per_chunk"`
	Selected       string             `json:"selected"` // the label of the detailed emulation
	Layers         []ane.LayerReport  `json:"layers"`
	Chunks         []ane.ChunkReport  `json:"chunks"`
	Outside        []ane.SiteReport   `json:"outside"`
	EndToEnd       ane.EndToEnd       `json:"end_to_end"`
	Configs        []ane.ConfigReport `json:"configs"`
}

// NumericsPlotFiles lists the figure files of a plot stem.
func NumericsPlotFiles(stem string) []string { return []string{stem + ".png", stem + ".svg"} }

// Numerics runs rows of a trace through a model's fp32 forward and
// through emulations of the Neural Engine's fp16 arithmetic on the same
// weights (package ane), and reports per layer and per chunk how far the
// device's stream departs, which tensors overflow or lose values to
// subnormal flushing, and the end-to-end KL, top-1 and perplexity against
// fp32 (docs/ane.md §1).
func Numerics(ctx context.Context, cfg NumericsConfig) (*NumericsReport, error) {
	if cfg.Model == "" || cfg.Trace == "" {
		return nil, errors.New("numerics: a model and a trace are required")
	}
	if cfg.Rows < 0 || cfg.Tokens < 0 || cfg.AttBlock < 0 || cfg.LayersPerChunk < 0 {
		return nil, fmt.Errorf("numerics: rows %d, tokens %d, attention block %d, layers per chunk %d: none may be negative",
			cfg.Rows, cfg.Tokens, cfg.AttBlock, cfg.LayersPerChunk)
	}
	if cfg.Tokens == 1 {
		return nil, errors.New("numerics: --tokens 1 leaves no next token to score; want at least 2")
	}
	targets := []outpath.Target{{Path: cfg.JSON, Owned: outpath.ForgeJSON}}
	if cfg.Plot != "" {
		fs := NumericsPlotFiles(cfg.Plot)
		targets = append(targets, outpath.Target{Path: fs[0], Owned: outpath.PNG}, outpath.Target{Path: fs[1], Owned: outpath.SVG})
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Model, cfg.Trace}, targets...); err != nil {
		return nil, fmt.Errorf("numerics: %w", err)
	}
	tr, err := eval.OpenTrace(cfg.Trace)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	ref, src, err := source.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := tr.CheckVocab(ref.Config().Vocab); err != nil {
		return nil, err
	}
	if fp, err := source.Origin(src); err == nil && cfg.Log != nil && tr.Meta.ModelKind == "checkpoint" && fp != "" && fp != tr.Meta.Fingerprint {
		cfg.Log(fmt.Sprintf("warning: %s was not made from the trace's model %s (fingerprint %.12s…, the trace's %.12s…): its text may be out of domain",
			cfg.Model, tr.Meta.Model, fp, tr.Meta.Fingerprint))
	}
	n := cfg.Rows
	if n == 0 {
		n = 4
	}
	n = min(n, tr.Rows())
	rows := make([][]int, n)
	for r := range rows {
		if rows[r], err = tr.Tokens(r); err != nil {
			return nil, err
		}
		if cfg.Tokens > 0 && len(rows[r]) > cfg.Tokens {
			rows[r] = rows[r][:cfg.Tokens]
		}
	}
	sel := ane.Options{Fixes: cfg.Fixes, AttBlock: cfg.AttBlock}
	configs := []ane.Options{sel}
	if !cfg.Only {
		configs = numericsConfigs(sel)
	}
	rep, err := ane.Compare(ctx, ref, func(o ane.Options) (*model.Model, *ane.Emulator, error) { return ane.Load(src, o) }, rows,
		ane.CompareOptions{Configs: configs, LayersPerChunk: cfg.LayersPerChunk, Progress: cfg.Progress})
	if err != nil {
		return nil, fmt.Errorf("numerics: %s on %s: %w", cfg.Model, cfg.Trace, err)
	}
	out := &NumericsReport{Model: cfg.Model, Trace: cfg.Trace, Rows: rep.Rows, Tokens: rep.Tokens,
		LayersPerChunk: rep.LayersPerChunk, Selected: ane.FixLabel(sel.Fixes), Configs: rep.Configs}
	for _, c := range rep.Configs {
		if c.Label == out.Selected {
			out.Layers, out.Chunks, out.Outside, out.EndToEnd = c.Layers, c.Chunks, c.Outside, c.EndToEnd
		}
	}
	if cfg.JSON != "" {
		raw, err := versionedJSON(out)
		if err != nil {
			return nil, fmt.Errorf("numerics: report: %w", err)
		}
		if err := durable.WriteFile(cfg.JSON, raw); err != nil {
			return nil, fmt.Errorf("numerics: report: %w", err)
		}
	}
	if cfg.Plot != "" {
		if err := plotNumerics(cfg.Plot, out); err != nil {
			return nil, fmt.Errorf("numerics: %w", err)
		}
	}
	return out, nil
}

// numericsConfigs lists the emulations measured besides sel: no fix, each
// recommended fix alone, all of them; sel is among them (added if not).
func numericsConfigs(sel ane.Options) []ane.Options {
	sets := [][]ane.Fix{nil}
	for _, f := range ane.Recommended {
		sets = append(sets, []ane.Fix{f})
	}
	sets = append(sets, ane.Recommended)
	var out []ane.Options
	have := false
	for _, fs := range sets {
		o := ane.Options{Fixes: fs, AttBlock: sel.AttBlock}
		have = have || ane.FixLabel(fs) == ane.FixLabel(sel.Fixes)
		out = append(out, o)
	}
	if !have {
		out = append(out, sel)
	}
	return out
}

// plotNumerics draws each emulation's relative L2 error by layer on a log
// axis (a layer whose stream is not finite has no point).
func plotNumerics(stem string, r *NumericsReport) error {
	fig := compare.SensitivityFigure{
		Title:  "fp16 emulation against fp32, same weights",
		XLabel: "layer (stream leaving it)",
		YLabel: "relative L2 error",
	}
	for l := range r.Layers {
		fig.Ticks = append(fig.Ticks, compare.Tick{Value: float64(l), Label: strconv.Itoa(l)})
	}
	for i, c := range r.Configs {
		s := compare.Series{Label: c.Label, Color: i, Shape: i}
		for _, l := range c.Layers {
			if v := float64(l.RelL2); !math.IsNaN(v) && !math.IsInf(v, 0) {
				s.X, s.Y = append(s.X, float64(l.Layer)), append(s.Y, v)
			}
		}
		if len(s.X) > 0 {
			fig.Series = append(fig.Series, s)
		}
	}
	if len(fig.Series) == 0 {
		return errors.New("plot: no emulation has a finite error to draw")
	}
	_, err := fig.Write(stem)
	return err
}
