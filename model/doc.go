// Package model is the Qwen3.5 hybrid text model (docs/model.md):
// Gated DeltaNet token mixers in three of every four layers, gated full
// attention in the fourth, a SwiGLU MLP in every layer, offset RMSNorms and
// an untied (or tied) head.
//
// Arithmetic is fp32 throughout: weights stay in their stored dtype behind
// the Linear seam and are widened inside the kernels; activations, norms,
// the delta rule and every state are fp32 (norm sums of squares and RoPE
// angles in float64). Prefill (T > 1) runs the chunked gated delta rule
// (§8.2, C = 64) with value heads in parallel; a decode step (T = 1) runs the
// recurrent form (§8.1) and allocates nothing. Both continue from a State,
// so prefill(a) then prefill(b) equals prefill(a‖b) up to fp32 rounding.
//
// Files: config.go (Config), tensors.go (the tensor inventory of a config),
// load.go (Load from a Source), model.go (Forward, the decoder layer and
// MLP), deltanet.go and deltarule.go (§7–8), attention.go and rope.go (§6),
// state.go (State, Mark/Rewind), ops.go and exp.go (norms, σ, silu,
// softplus, a 2-ulp float32 exp), rows.go (row-parallel norms and SwiGLU).
package model
