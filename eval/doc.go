// Package eval measures how far a candidate model (a quantized bundle, or
// the reference with parts swapped) is from its reference, on the
// reference's own next-token distributions (docs/quantization.md §7):
//
//	reference ─ Record ─▶ trace file ─ OpenTrace ─▶ Score(candidate) ─▶ Result ─ Summarize ─▶ Report
//
// Record (trace.go) runs the reference over token rows (package calib
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
// float32 .npy (npy.go), 1-D in trace order; the Report (and its JSON)
// lays it out in rows: row_positions, the scored positions of each row,
// and sources, the data files the rows came from in order with their row
// counts (from the trace's recipe; Trace.RowPositions, Trace.Sources). A
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
// model, model_kind ("checkpoint" or "bundle"), fingerprint, vocab, topk,
// seq, rows, positions, definition ("full" or "top-K+tail") and data (the
// calib.Recipe of the rows as JSON: sources, their SHA-256s, options, the
// rows' fingerprint; the rows are the sources' rows in source order).
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
// # llama.cpp-compatible mode
//
// lcpp*.go implement llama-perplexity --kl-divergence as docs/quantization.md §7.3
// defines it: windows of n_ctx tokens (BOS replacing the first when the
// tokenizer config adds one), only the second half scored, the base's
// logits stored as uint16 (LCPPCompress), KL over base log-probs > −16,
// and every statistic llama.cpp prints, with its uncertainty, in the same
// order and wording (LCPPReport.Print). Bases are forge safetensors files
// or llama.cpp's own binary --kl-divergence-base files (both read and
// written). Forge's layout (lcpp_version 2, lcpp_file.go) stores a CRC-32C
// of the tokens and of each window, verified at open and by ReadWindow;
// version 1 files, without them, are still read. llama.cpp's binary layout
// has no checksum and cannot gain one: llama-perplexity reads exactly its
// bytes. Its numbers use llama.cpp's definition and are not compared with
// the "full" or "top-K+tail" ones.
//
// # Comparisons and plots
//
// compare*.go and plot.go set Reports (their JSON) side by side, grouped by
// definition, as a terminal or Markdown table, and draw with gonum/plot
// (PNG and SVG): the KL CDF of each run, KL by position within a row (one
// panel per data source, per run the mean over rows with a ± s.e. band;
// plot_rows.go; reports without row_positions fall back to KL along the
// trace, with a note), and for ablations the mean and p99 KL per part or
// layer band.
package eval
