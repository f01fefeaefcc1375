// Package recon is block reconstruction (docs/quantization.md §6.2): with
// every LUT index and INT8 code fixed, it fits the codebook values,
// per-channel log-scales and low-rank factors of one decoder layer so that
// the quantized layer, fed the quantized stream, reproduces the reference
// stream (../shared/docs/reference-pipeline.md §2).
//
// # Differentiable layer, float64, no autograd
//
// The package re-implements a Qwen3.5 decoder layer (docs/model.md §4–§10)
// in float64 with hand-written backward passes: RMSNorm, the SwiGLU MLP,
// gated full attention (per-head norms, partial RoPE, causal GQA softmax,
// σ output gate) and Gated DeltaNet (causal depthwise conv + SiLU, L2-norm
// of q and k, the decay and β gates, the gated delta rule in its recurrent
// form — equal to the chunked form in exact arithmetic — backward through
// the recurrence for the whole sequence, and the gated output norm). Every
// product goes through a Linear, so the layer code is the same for dense
// weights (Dense: the tests' finite-difference checks) and for a
// quantized matrix parameterized by its codebooks, log-scales and factors
// (Matrix). Each sequence starts from an empty state at position 0, as a
// calibration row does.
//
// Tests check every gradient against central finite differences in float64
// and the float64 forward against the model package's fp32 forward.
package recon
