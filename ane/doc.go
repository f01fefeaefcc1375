// Package ane tells a user, before anyone builds a graph, whether a model
// survives Apple's Neural Engine: an emulation of the device's fp16
// arithmetic that decorates the model's Linears and ops (not a fork of
// the forward), and the per-layer divergence report that compares it with
// the fp32 forward of the same weights (docs/ane.md).
//
// Its subpackages hold the rest of the ANE side: ane/chunk (the chunk
// plan and its cost model) and ane/layout (the reference builder's layer
// files, written and read).
package ane
