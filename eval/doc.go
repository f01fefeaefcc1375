// Package eval measures how far a candidate model (a quantized bundle, or
// the reference with parts swapped) is from its reference, on the
// reference's own next-token distributions (docs/quantization.md §7):
//
//	reference ─ Record ─▶ trace file ─ OpenTrace ─▶ Score(candidate) ─▶ Result ─ Summarize ─▶ Report
//
// Record (trace.go) runs the reference over token rows (package corpus
// makes them), each from an empty state in one prefill, and stores for
// every position t = 0…T−2 of a row of T tokens the distribution p over
// the token t+1 that follows. Score (score.go) runs the candidate over the
// same rows and computes per position, in float64:
//
//	KL(p‖q) = Σ_i p_i (log p_i − log q_i)        nats, exact over the vocabulary ("full" traces)
//	        or over the top-K tokens + one tail bucket ("top-K+tail" traces, KLTopK)
//	top-1     argmax p = argmax q (first index on ties)
//	NLL       −log q(x_{t+1}) and −log p(x_{t+1}), so ppl = exp(mean NLL) for both
//	Δp        q(x_{t+1}) − p(x_{t+1})
//
// and Summarize (report.go) reduces them to a Report: mean ± standard
// error, percentiles by llama.cpp's rule (Percentile), top-1 agreement,
// perplexities and Δp statistics. The per-position KL can be written as a
// float32 .npy (package internal/npy), 1-D in trace order; the Report
// (and its JSON) lays it out in rows: row_positions, the scored positions
// of each row, and sources, the data files the rows came from in order
// with their row counts (from the trace's recipe; Trace.RowPositions,
// Trace.Sources; CheckRowLayout checks them in a report read back). A
// trace says which definition it holds; results of different definitions
// are not comparable.
//
// # Trace file
//
// One safetensors file (package safetensors), written by the streaming
// atomic writer, so it appears only when complete. Layout version 2
// (TraceVersion): for each row r = 0…R−1, in this order, its tensors in
// this order, with T_r its tokens, N = T_r − 1 its scored positions, V the
// vocabulary and K the top-K:
//
//	tokens.<r>     I32 [T_r]    the row's token ids
//	logp.<r>       F32 [N, V]   full traces: float32(z_i − L), L = logsumexp(z) in float64
//	topk_ids.<r>   I32 [N, K]   top-K traces: the K most likely ids, most likely first (lower id on ties)
//	topk_logp.<r>  F32 [N, K]   their log-probs, as logp
//	tail.<r>       F32 [N]      1 − Σ top-K p, summed as Σ_{i∉top-K} exp(logp_i) in float64
//	ref_nll.<r>    F32 [N]      the reference's NLL of the actual next token, L − z_{x_{t+1}} in float64
//	crc32c.<r>     U8 [4]       CRC-32C (Castagnoli) of the row's bytes above, little-endian
//
// A full trace has logp.<r> and no topk_ids, topk_logp or tail; a top-K
// trace the reverse. The row's tensors before crc32c.<r> are contiguous in
// the file, so the checksum covers the byte span from tokens.<r> to the
// end of ref_nll.<r>. It is computed while the row is streamed (the header,
// written first, only declares it) and catches what the value checks
// cannot: a flipped mantissa bit leaves a plausible log-prob. CRC-32C
// detects every single-bit error and any other damage with probability
// 1 − 2⁻³²; it runs at several GB/s (hardware CRC), so verifying costs one
// fast pass over a row. OpenTrace checks the layout only and reads no row
// data; a row is verified when first read (Trace.Tokens, Score), just
// before its bytes are decoded, so opening stays cheap for a full trace of
// many gigabytes and a damaged row fails, naming the file and the row,
// with ErrChecksum before any of it is scored. The header and metadata are
// not covered (damage there mostly breaks the JSON or the layout checks).
//
// Version 1 traces (written before the checksums) are the same without
// the crc32c.<r> tensors; OpenTrace still reads them (Meta.Version 1) and
// Score scores them, unverified.
//
// ref_nll is kept in both modes, so the reference perplexity is exact even
// when the actual token is outside the top K. The "__metadata__" holds
// (all strings): forge_trace (the layout version, "2"), forge_version,
// model, model_kind ("checkpoint" or "bundle") and fingerprint (both as
// source.Fingerprint gives them), vocab, topk, seq, rows, positions,
// definition ("full" or "top-K+tail") and data (the
// corpus.Recipe of the rows as JSON: sources, their SHA-256s, options, the
// rows' fingerprint; the rows are the sources' rows in source order; rows
// the reference generated, forge trace --generate, add "generation": the
// prompts file, its SHA-256 and the sampling settings and seed).
// OpenTrace refuses a file that is truncated, lacks any of these, has a
// layout version other than 1 or 2, or whose tensors do not match the
// layout exactly; Score refuses a damaged row (ErrChecksum), a candidate
// with another vocabulary and stored values that cannot be log-probs.
//
// A full trace of a model with a 248k vocabulary takes about 1 MB per
// position (4·V bytes); a top-256 trace about 2 KB. Record keeps one row's
// logits (the model's own buffer) and at most 32 MiB of encoded log-probs
// in memory; Score maps the file and decodes one position at a time per
// worker.
//
// # Log-probabilities
//
// logprob.go holds forge's one log-softmax, used by Record, Score,
// eval/lcpp and the root's ppl and logits, in float64 with the maximum m
// subtracted first:
//
//	LogSumExp(z)       L = m + log Σ_i exp(z_i − m)
//	LogSoftmax(dst, z) dst[i] = float32(z_i − L), returns L
//	NLL(z, y)          L − z_y = −log softmax(z)_y
//	Argmax(x)          the index of the largest value, the first on ties
//
// and the KL of full and top-K+tail traces (KLFull, KLTopK).
//
// # Related packages
//
// eval/lcpp implements llama.cpp's --kl-divergence mode (its own windows,
// uint16 base files in forge's and llama.cpp's layouts, and llama.cpp's
// statistics and printout; docs/quantization.md §7.3). eval/compare sets
// Reports (their JSON) side by side as tables and plots; it is the only
// package importing gonum.org/v1/plot, so eval itself carries no plotting.
package eval
