// Package chart draws a sweep (plan.Sweep) and the plans chosen from it
// (plan.Solution) as PNG and SVG figures (docs/quantization.md §4.5):
//
//   - Sensitivity: the ΔKL of quantizing each unit alone against its
//     layer, on a log axis with ± s.e. bars, one series per part (mlp,
//     mixer, attn, kv; for matrix units the matrix's role) and candidate,
//     one per candidate for layer and band units; the head, when it is a
//     unit, at x = the number of layers;
//   - Pareto: the predicted front, the least summed ΔKL (or p99) of any
//     plan of each size (Front: plan.Solve at evenly spaced budgets
//     between the smallest and the largest plan), against bits per weight,
//     with every uniform plan and the chosen plan marked, and optionally
//     the KL measured on the chosen plan's bundle.
//
// A prediction checked against measurements (the gate's pairs) is drawn
// by eval/compare's PredictionFigure, which takes plain numbers. This
// package only turns sweeps and solutions into figures; eval/compare
// renders them, since it is the one forge package that imports
// gonum.org/v1/plot. Errors wrap plan.ErrSweep (an empty or malformed
// sweep) or ErrForeign (a solution chosen from another sweep).
package chart
