// Package quant holds forge's quantization algorithms: codebook fitting by
// k-means, round-to-nearest into every lut.Format, the weight SNR, and the
// Quantizer interface that GPTQ (quantization.md §3, a later issue) will
// also implement. It produces lut.Matrix values and never multiplies them.
//
// # Files
//
//	kmeans.go   Codebook; FitScalar (weighted 1-D Lloyd, exact on sorted data);
//	            FitVectors (weighted k-means++, ≤ 300,000 sampled vectors, 3 inits, ≤ 200 iterations)
//	rtn.go      Quantizer, Nearest, RTN, Options, PCS
//	hessian.go  Hessian (diag(H) only for now, for AW)
//	snr.go      SNR, WeightedSNR
//
// # Choices (quantization.md §1–2, and where it is silent)
//
//   - pcs: s[o] = √(mean_j W[o,j]²), computed in float64, rounded through
//     float32 to fp16; a zero scale becomes 1; an fp16 overflow is an error.
//     INT8: s[o] = max_j |W[o,j]|/127 the same way, codes round half to even
//     and are clipped to [−127, 127].
//   - Codebooks are fit to the normalized weights W/s (d-vectors along Cout
//     for vector formats), one per tensor or per group of G output rows,
//     then rounded to fp16; only then is every weight rounded to its
//     nearest entry (ties: lowest index). Rounding is nearest for every
//     weight, with or without AW: importance weights only move the entries.
//   - Scalar codebooks: weighted 1-D Lloyd from the weighted quantiles
//     (i+½)/K, iterated to a fixed point (≤ 1000 iterations, each O(K log n)
//     on the sorted values) on all values of the group, or on 2²⁰ sampled
//     without replacement when there are more (the sampling moves the SNR by
//     ~0.01 dB). On N(0, 1) this reaches the
//     Lloyd–Max SNRs (4.40, 9.30, 14.62, 20.22 dB for 1–4 bits).
//   - Vector codebooks: weighted k-means++ seeding, Lloyd iterations until
//     no assignment changes, the error improves by < 10⁻⁶ (relative) or 200
//     iterations; the best of 3 initializations; an empty cluster is
//     re-seeded at the worst-served sample.
//   - Determinism: everything depends only on Options.Seed (and the group
//     number); sums are taken in a fixed order, so GOMAXPROCS does not
//     change a codebook.
//   - AW: Options.Importance (or Nearest{AW: true} with a Hessian) weights
//     each weight's squared error by diag(H)[j] of its input column.
package quant
