// Package chunk plans a model's layout on Apple's Neural Engine the way the
// reference deploys it (docs/reference-pipeline.md §8) and projects what one
// step costs: the model is cut into chunks of consecutive decoder layers
// plus a head chunk (final norm and lm_head); the embedding lookup runs on
// the host. Each chunk package holds one weight copy shared by its context
// entries (v8_<N>k verify/decode, p64_<N>k prefill). The plan says, per
// chunk, which matrices it holds and where each runs (lut.Place), the
// bytes of its weights, of its DeltaNet state and of its KV cache per
// position and per context entry, and a projected time per T-row step.
// forge cannot run an ANE: every time here is a projection, calibrated on
// the reference's measurements, and says so (docs/ane.md §2).
//
// # Byte accounting
//
//	matrix      the bundle's bytes (lut.Format.Size: indices, LUTs, scales, low-rank factors);
//	            a float matrix (bf16, fp16, f32) runs as fp16: 2·out·in
//	vectors     norms, conv taps, A_log, dt_bias in fp16: 2·elements
//	KV / token  per attention layer, fp16:   2·Hkv·D·2            (K and V fp16)
//	                             int8-V: Hkv·D·2 + Hkv·D + 2·Hkv  (K fp16, V int8, one fp16 scale per KV head)
//	kv_len      ctx − 64 (the 64-row prefill block; 65536 → 65472, §5.4)
//	state       per DeltaNet layer, fp16, one buffer set (§5.2, lazy commit with P = T):
//	            Hv·dk·dv (recurrent) + (T+K−1)·conv_dim (conv rows) + Hv·(3T+1)·dv (pending rows);
//	            two sets are held (ping-pong) and a step reads one and writes the other
//
// # Cost model (a projection)
//
//	ms per step = (cost bytes of the ANE matrices + vector bytes + 2·state bytes) / B_w
//	            + KV bytes at kv_len / B_kv
//
// where a matrix's cost bytes are its bytes with 3- and 6-bit indices
// counted at 4 and 8 bits (read like them) and ×1.2 for per-group scalar
// LUTs (measured +19–21%), both from docs/quantization.md §1. B_w and B_kv
// are fitted to the reference's measured T=8 verify times on Qwen3.5-27B
// (§5.6: 91.5 ms at 8K, 131.5 ms at 64K; 97.4 and 108.0 ms at 16K and 32K
// are left as checks) with its deployed mix (reference.go). Matrices that
// fall back to the CPU, or cannot be expressed, are counted apart and are
// not in the projection.
//
// # Files
//
//	plan.go       Options, Weight, Plan, Chunk, Matrix, Placement; New
//	kv.go         KV and DeltaNet state formulas, context entries, ParseContexts
//	cost.go       Bandwidths, the step time, Calibrate (the fit and its checks)
//	reference.go  the reference's 27B shape, deployed mix and measured times
package chunk
