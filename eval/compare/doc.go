// Package compare sets evaluation reports side by side: it reads the JSON
// reports of forge eval --json (eval.Report) and, optionally, their
// per-position KL files (forge eval --kl-out, 1-D float32 .npy read by
// package internal/npy), and writes them as a terminal or Markdown table
// and as plots (PNG and SVG). forge eval compare (the root's Compare) uses
// it. It is the only forge package that imports gonum.org/v1/plot, so
// nothing that evaluates or serves a model carries the plotting library;
// it also draws figures of plain numbers for the planner (figure.go:
// SensitivityFigure, ParetoFigure, which package plan/chart fills from a
// sweep and a plan, and PredictionFigure, predicted against measured KL).
//
//	reports (+ KL files) ─ Load ─▶ Set ─┬─ WriteTable / WriteMarkdown
//	                                    └─ Plot: kl-cdf, kl-position, kl-parts, kl-bpw
//
// Results of different KL definitions are not compared
// (docs/quantization.md §7): Load splits the reports into Groups, one per
// definition, and every table and plot covers one group; Set.Warnings says
// so, and warns when the runs of a group were scored on different traces
// or a KL file's mean disagrees with its report's (files given in the
// wrong order). Every problem with an input is an error naming the file
// and wrapping ErrInput.
//
// The plots (plot.go, plot_rows.go) are the KL CDF of each run; KL by
// position within a row, one panel per data source, per run the mean over
// rows with a ± s.e. band (reports without row_positions fall back to KL
// along the trace, with a note); and for ablations the mean and p99 KL per
// part or layer band. The same input writes the same bytes.
package compare
