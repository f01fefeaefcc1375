// Package quant holds forge's quantization algorithms: codebook fitting by
// k-means, round-to-nearest into every lut.Format, the calibration
// Hessian, GPTQ on LUT grids (docs/quantization.md §3), the weight and output
// SNRs, the low-rank correction, the Quantizer interface that Nearest and
// GPTQ implement, and Spec, the per-matrix pipeline that chains them
// (Spec.Quantize). It produces lut.Matrix values and never multiplies them;
// the online rotation it quantizes under is lut.Hadamard.
//
// # Files
//
//	kmeans.go   Codebook; FitScalar (weighted 1-D Lloyd, exact on sorted data);
//	            FitVectors (weighted k-means++, ≤ 300,000 sampled vectors, 3 inits, ≤ 200 iterations)
//	rtn.go      Quantizer, Nearest, RTN, Options, PCS; grid (scales + codebooks, shared with GPTQ)
//	hessian.go  Hessian: full H = XᵀX/N (float32 chunk GEMM + float64 totals, or dsyrk), DiagOnly,
//	            DiagHessian; Add, Rows, Diag, Matrix, Merge
//	gptq.go     GPTQ (Quantizer): column order, damping, U = chol(H⁻¹) by reversal, blocked rounding
//	snr.go      SNR, WeightedSNR, OutputSNR (tr(WHWᵀ)/tr(EHEᵀ), float64)
//	la*.go      the linear-algebra backend (linalg): la_go.go pure Go (gonum + tensor.Dense),
//	            la_openblas.go cgo OpenBLAS (build tag openblas), la_default.go / la_nocgo.go select
//	lowrank.go  LowRank, LowRankOptions, LowRankFit: seeded randomized SVD of E = W − Ŵ, A [out,r] = U·Σ,
//	            B [r,in] unit rows, fp16; optionally H-weighted via Cholesky of H + λI (§5)
//	pieces.go   the pipeline's pieces: Rotated (W·M by lut.Hadamard, §3), DequantOutputSNR,
//	            Correction (LowRank of W − Ŵ, padded to rank r)
//	refit.go    Refit: codebooks and scales refit to H with the indices fixed (alternating exact block
//	            minimizations, fp16 rounding, keep-if-better); refit_stats.go its Gram statistics
//	spec.go     Spec, Method, Stats, Report: Spec.Quantize, the one per-matrix pipeline
//	            rotate → round (RTN or GPTQ) → held-out SNRs → refit (kept if held-out SNR rises)
//	            → low-rank correction → attach the rotation
//
// # Choices (docs/quantization.md §1–2, and where it is silent)
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
//
// # GPTQ and the Hessian (docs/quantization.md §3, and where it is silent)
//
//   - GPTQ rounds to RTN's grid (same scales from the original W, same
//     codebooks for the same Options and AW), so with a diagonal H it
//     returns exactly RTN's arrays; it only changes codes. Columns go in
//     descending diag(H) order (stable); λ = Damp·mean(diag H), Damp 0.01
//     by default; blocks of 128 columns; the factorization is float64; the
//     error feedback is float64 within sub-blocks of 16 columns, and the
//     lazy updates (sub-block → rest of block, block → rest of matrix) are
//     float32 GEMMs, W being kept in float32 as in the reference.
//   - Dead columns (H_jj = 0) get H_jj = 1 as in the reference, but keep
//     their weights (rounded to nearest) instead of being zeroed.
//   - The upper Cholesky factor U of H⁻¹ comes from one dpotrf and one
//     dtrtri: with J the order reversal, JHJ = LLᵀ gives H⁻¹ = UᵀU with
//     U = J·L⁻¹·J, which is L⁻¹'s storage reversed (2n³/3 flops instead of
//     the reference's Cholesky, inverse and second Cholesky, 4n³/3).
//   - Hessian: diag(H) exact in float64 in row order (backend-independent,
//     so column order and AW do not depend on the build); off-diagonals per
//     128-row chunk in float32 (pure Go) or float64 (OpenBLAS), totals in
//     float64; rows buffered so the split among Add calls does not matter.
//     An H that is not positive definite even after damping is an error
//     (raise Damp), never silently re-damped.
//   - Backends: the default build is pure Go (gonum v0.17.0's dpotrf and
//     dgemm, a recursive triangular inverse on that dgemm; tensor.Dense
//     for the float32 products); `-tags
//     openblas` (cgo, Debian libopenblas-dev) binds cblas_dsyrk,
//     cblas_sgemm, cblas_dgemm, dpotrf_ and dtrtri_ directly. Both pass the
//     same tests; with both compiled (the openblas build) a test checks
//     they agree. The openblas tag without cgo does not compile.
package quant
