// Package lcpp is forge's llama.cpp-compatible KL mode: the definitions of
// llama.cpp's `llama-perplexity --kl-divergence`
// (tools/perplexity/perplexity.cpp: perplexity, log_softmax,
// process_logits, kl_divergence), as docs/quantization.md §7.3 states
// them, and its base files in both layouts. forge trace lcpp and
// forge eval lcpp (the root's TraceLCPP and EvalLCPP) use it.
//
// The flow is
//
//	trace:    tokens → Chunks → for each window: Window → model logits
//	          → Compress of the scored rows → Writer (Create)
//	evaluate: Base (Open) → for each window: Window → candidate logits
//	          → Score of the scored rows → Stats → Report
//
// A text is cut into windows of n_ctx tokens (Chunks; BOS replacing the
// first when the tokenizer adds one, Window), only the second half of
// each window is scored (Scored), the base's logits are stored as uint16
// (Compress, decoded by LogProb), KL is summed over base log-probs
// > −16 (Score), and Stats accumulates every statistic llama.cpp prints,
// with its uncertainty; Report.Print prints them in llama.cpp's order and
// wording, Report.JSON as JSON. Score's log-sum-exp and argmax are
// package eval's (eval.LogSumExp, eval.Argmax); Compress keeps llama.cpp's
// own float32 steps so that a base written here matches one written there.
//
// Bases are forge safetensors files (Forge) or llama.cpp's own binary
// --kl-divergence-base files (LlamaCpp), both read and written
// (file.go has the layouts). Forge's layout (lcpp_version 2) stores a
// CRC-32C of the tokens and of each window, verified by Open and
// Base.ReadWindow (eval.ErrChecksum); version 1 files, without them, are
// still read. llama.cpp's binary layout has no checksum and cannot gain
// one: llama-perplexity reads exactly its bytes.
//
// Results of this mode are compared only with results of this mode
// (Definition): it scores the second half of each window against a
// uint16-compressed base, which is not the definition of forge's own
// traces (package eval, docs/quantization.md §7.1).
package lcpp
