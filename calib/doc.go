// Package calib turns calibration and evaluation files into token rows, for
// `forge quantize --calib FILE:ROWS` and `forge trace --data FILE[:ROWS]`, and
// runs a model layer by layer over them to collect each Linear's input
// statistics for the quantizer (layerwise.go).
//
// # Sources
//
// A source is named by a Spec, "FILE" (all rows) or "FILE:ROWS" (ParseSpec), and read by the
// file's extension (KindOf):
//
//	.txt    Text  documents separated by lines that are exactly <|endoftext|>
//	.jsonl  Chat  one conversation per line: {"messages": [...], "tools"?: [...]} (OpenAI format)
//	.json   JSON  [[id, id, ...], ...]: rows of token ids
//	.npy    NPY   a 2-D C-order array of little-endian integers (int8..int64, uint8..uint64)
//
// Text and chat files become one token stream (spec.go, text.go):
//
//	document or conversation ─ tok.Encode (conversations first rendered by tok.Chat)
//	                         ─ joined in file order with the <|endoftext|> id between them
//	                         ─ cut into consecutive rows of Options.Seq tokens (1024 by default),
//	                           the final partial row dropped
//
// A .txt document is its complete lines, line ends included, between two separator lines;
// empty documents are skipped. Encode recognizes added tokens inside documents as Hugging
// Face's encode does by default; no BOS token is added. A conversation is rendered with the
// line's tools, tool-call arguments parsed from JSON strings (ChatOptions.ParseArguments) and
// no generation prompt, and the rendering is encoded with its special tokens recognized.
//
// Pre-tokenized files (.json, text.go; .npy, npy.go, parsed by package internal/npy) give rows as
// they are; a positive Options.Seq keeps the first Seq tokens of longer rows and rejects
// shorter ones.
//
// Load reads the specs in order, checks every id against the tokenizer's vocabulary, and when
// a spec asks for fewer rows than its file has, samples them without replacement with a seeded
// generator (Sample), keeping file order (source.go). The Set holds the rows of all specs in
// spec order, per-source facts (kind, rows taken and available, the file's SHA-256, tokens)
// and a Recipe for manifests, whose Fingerprint hashes the rows themselves. HoldOut splits the
// last rows off for held-out evaluation.
//
// # Layer-by-layer calibration
//
// Runner (layerwise.go) is true-sequential calibration (docs/quantization.md §3): it embeds every
// row, then for each layer ℓ and each of its Groups in order — the mixer input projections,
// the mixer output projection, MLP gate/up, MLP down — runs the rows through layer ℓ alone
// (model.ForwardLayer) with a recorder in the group's first slot that adds the input rows
// (rotated by the group's Rotation, if any) to two quant.Hessians, one over the training rows
// and one over the held-out rows, and hands them to a GroupFunc that returns the quantized
// Linears to put in the slots. The next group therefore sees this one quantized, and once the
// layer's groups are done the rows are run through the quantized layer to become layer ℓ+1's
// input. The head comes last (its input is the final norm). Inputs that are a norm of the
// residual stream (the first group, the head) are computed directly (model.Norm) without
// running the mixer. Memory: one layer's hidden states for every row plus one group's
// Hessians.
//
// Errors name the file and the problem (the line for .jsonl and .json) and wrap one of
// ErrSpec, ErrUnsupported, ErrFormat, ErrTooFewRows or ErrTokenRange.
package calib
