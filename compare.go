package forge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"forge/eval/compare"
	"forge/internal/durable"
	"forge/internal/outpath"
)

// CompareConfig configures Compare.
type CompareConfig struct {
	Reports []string // reports written by forge eval --json, at least one
	// KL holds the per-position KL files (forge eval --kl-out), one per
	// report in the same order, "" for a report without one. Empty: no
	// KL CDF or per-position plots.
	KL []string
	// OutDir receives compare.md and the plots ("": the directory of the
	// first report); it is created if missing.
	OutDir string
	// Parts asks for the ablation chart: an error when no report carries
	// parts or layers. Without it the chart is drawn whenever one does.
	Parts bool
	// Overwrite replaces compare.md and plots that forge wrote earlier.
	Overwrite bool
	Out       io.Writer // the table, warnings, notes and files written; nil discards
}

// Compare lays evaluation reports side by side: it prints a table per KL
// definition to cfg.Out (runs of different definitions are never compared
// with each other, docs/quantization.md §7: a warning says the set was split),
// writes the same tables as Markdown to OUTDIR/compare.md, and plots KL
// (compare.Set.Plot: CDF, along the trace, per ablation) as PNG and
// SVG into OUTDIR.
func Compare(ctx context.Context, cfg CompareConfig) (*compare.Set, error) {
	c, err := compare.Load(cfg.Reports, cfg.KL)
	if err != nil {
		return nil, err
	}
	if cfg.Parts && !hasAblation(c) {
		return nil, fmt.Errorf("compare: the ablation chart was asked for, but none of the %d reports carries a parts or layers field (an ablation report)",
			len(c.Runs))
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if err := c.WriteTable(out); err != nil {
		return nil, fmt.Errorf("compare: writing the table: %w", err)
	}
	dir := cfg.OutDir
	if dir == "" {
		dir = filepath.Dir(cfg.Reports[0])
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("compare: output directory: %w", err)
	}
	mdPath := filepath.Join(dir, "compare.md")
	if err := checkOutputs(cfg.Overwrite, append(slices.Clone(cfg.Reports), cfg.KL...), compareTargets(c, dir, mdPath)...); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var md bytes.Buffer
	md.WriteString(outpath.MarkdownHeader)
	if err := c.WriteMarkdown(&md); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(mdPath, md.Bytes()); err != nil {
		return nil, fmt.Errorf("compare: %s: %w", mdPath, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, notes, err := c.Plot(dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(out)
	for _, n := range notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	fmt.Fprintf(out, "wrote %s\n", mdPath)
	for _, f := range files {
		fmt.Fprintf(out, "wrote %s\n", f)
	}
	return c, nil
}

// compareTargets lists every file Compare may write into dir: compare.md
// and each plot's PNG and SVG (compare.Set.Plot names them, with a
// -gN suffix per definition group when there are several).
func compareTargets(c *compare.Set, dir, md string) []outpath.Target {
	ts := []outpath.Target{{Path: md, Owned: outpath.ForgeMarkdown}}
	for i := range c.Groups {
		suffix := ""
		if len(c.Groups) > 1 {
			suffix = fmt.Sprintf("-g%d", i+1)
		}
		for _, name := range []string{"kl-cdf", "kl-position", "kl-parts", "kl-bpw"} {
			p := filepath.Join(dir, name+suffix)
			ts = append(ts, outpath.Target{Path: p + ".png", Owned: outpath.PNG}, outpath.Target{Path: p + ".svg", Owned: outpath.SVG})
		}
	}
	return ts
}

// hasAblation reports whether any run of c quantized only some parts or layers.
func hasAblation(c *compare.Set) bool {
	for _, r := range c.Runs {
		if r.Ablation() {
			return true
		}
	}
	return false
}
