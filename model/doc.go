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
// A decode step runs the products that read one input (a layer's mixer
// projections, MLP gate and up, the head) as one call on the worker pool
// split by output rows in chunks that shrink towards the end of the call
// (stage.go, tensor.ParallelGuided, through the Linears' MulRows when they
// have it), and times itself to choose between that and running alone on
// the caller, whichever is faster on the machine's current load
// (stepMode; verify blocks and step batches choose likewise, a chooser
// for each number of rows, which starts from a warm one's pick); both
// give the same bits. Warm runs a State through those first calls before
// a reply (warm.go). With GOEXPERIMENT=simd on an
// AVX-512 CPU the elementwise activations (SiLU and sigmoid in assembly,
// act_amd64.s), the conv, the recurrent delta
// rule step and attention (decode steps, and prefill's rows one by one as
// the steps at their positions) run vector kernels (vec_simd.go) that
// make the scalar code's operations in its order, so results are the same
// bits in every build, except the dot products q·k of attention (whose
// scores and weighted sums run in assembly, scores_amd64.s: sixteen
// positions a pass, the query heads of one KV head while its rows are in
// L1, and four heads' weighted sums from each row of values, with the
// bits of vec_simd.go's loops; the delta rule's blocks of 128 value
// columns in deltarule_amd64.s, a state row's eight vectors in registers);
// on a CPU with AVX2 only, the elementwise activations, the delta rule
// step and decode attention have AVX2 twins of the same kind
// (vec_avx2.go, attention_avx2.go; attention's dot products and weighted
// sums in assembly, attention_avx2_amd64.s, whose Go twins it is tested
// against bit for bit). Prefill's chunked rule runs its dot products and
// row sums sixteen columns a vector on AVX-512, eight on AVX2
// (deltachunk_simd.go, vec_avx2.go), with its scalar loops' bits.
//
// A State's Act (act.go) chooses how its steps multiply activations by
// 4-bit LUT weights: float32 (ActFloat32, the default), or quantized to
// int8 in groups of 32 columns (ActInt8, as llama.cpp multiplies its
// quantized weights; lut.Int8Input): every step where the CPU has fast
// int8 kernels (AVX-512 or AVX2), else decode steps and verify blocks of
// up to Int8Rows rows; each input quantized once per step for all the
// products that read it.
//
// Verify (verify.go) runs a block of tokens as that many decode steps in
// one forward — each row a decode step bit for bit, the weights read once
// for all rows — and leaves the rows pending until Commit keeps a prefix:
// speculative decoding's verify block, where rejected rows never reach
// the State (DeltaNet rows run on working copies made once per block, KV
// rows are truncated). A block's rows pass over a DeltaNet head's state
// T + 1 times instead of 2T (deltaRows: each row's update fused with the
// next row's decay, the same operations per column, deltarows_simd.go);
// its raw and conv'd DeltaNet rows are written where Commit replays them
// from (a kept prefix shorter than the block replays head by head through
// deltaRows, the heads on the pool for a large state); its attention runs
// every (row, KV head) pair in one pool call (attendBlock); and the rows
// of a large block are quantized to int8 on every core the products then
// run on (stage.quantizeRows). StepBatch (batch.go) runs one decode step
// of each of several States in one forward — server slots decoding at
// once — each row again its State's decode step bit for bit.
//
// A State with a Numerics (numerics.go; package ane: the Neural Engine's
// fp16) runs the same forward on a measuring path: every tensor a device
// would store is handed to the Numerics to round as it is made, SiLU and
// softplus are the Numerics' own, rescalings that are exact in real
// arithmetic can be switched on, and the DeltaNet runs its recurrent form
// row by row.
//
// Files: config.go (Config), tensors.go (the tensor inventory of a config),
// load.go (Load from a Source), model.go (Forward, the decoder layer and
// MLP), deltanet.go and deltarule.go (§7–8), attention.go and rope.go (§6),
// state.go (State, Mark/Rewind), verify.go (Verify/Commit), batch.go (StepBatch), snapshot.go
// (Snapshot/Restore), ops.go and exp.go (norms, σ, silu,
// softplus, a 2-ulp float32 exp), rows.go (row-parallel norms and SwiGLU),
// stage.go (a decode step's products on the pool, stepMode), act.go (Act:
// int8 activations), kvcache.go (KV: the int8 KV cache), vec.go,
// vec_simd.go, deltarows_simd.go, scores_amd64.s, deltarule_amd64.s,
// act_amd64.s and vec_go.go (row loops and their AVX-512 kernels),
// vec_avx2.go, attention_avx2.go and attention_avx2_amd64.s (their AVX2
// twins),
// numerics.go (Numerics: an emulated device's arithmetic).
package model
