// Package forge is the API of the forge tool: each job is one short
// function with a config struct whose zero values are the defaults —
// Inspect, Logits, Synth, Dequantize (models); Quantize, SNR, GenerateRows,
// CalibGenerate (quantize, generated data); Sweep, MergeSweeps, EmitSweep,
// PlanBudget, Gate (mixed precision under a budget); Trace, Evaluate, Compare,
// TraceLCPP, EvalLCPP, PPL (evaluate); Run, Bench and OpenRuntime, a model
// ready to generate (run) — reading
// top to bottom over the packages below (docs/architecture.md). Every job
// checks its outputs against its inputs before any work (outputs.go), and
// cmd/forge maps flags onto the configs; no flag name appears here.
package forge

// Version is forge's version, recorded in everything it writes.
const Version = "0.1.0-dev"
