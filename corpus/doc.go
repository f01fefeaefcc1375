// Package corpus turns text, chat and token-id files into token rows: the calibration data of
// `forge quantize --calib FILE:ROWS` and the evaluation data of `forge trace --data FILE[:ROWS]`
// and `forge ppl`. It reads files and a tokenizer and knows nothing of models.
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
// Text and chat files become one token stream (load.go, text.go):
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
// # Sets and recipes
//
// Load reads the specs in order, checks every id against the tokenizer's vocabulary, and when
// a spec asks for fewer rows than its file has, samples them without replacement with a seeded
// generator (Sample), keeping file order (load.go). The Set holds the rows of all specs in
// spec order, per-source facts (kind, rows taken and available, the file's SHA-256, tokens)
// and a Recipe for manifests and traces, whose Fingerprint hashes the rows themselves (it
// identifies data, not a model). HoldOut splits the last rows off for held-out evaluation.
//
// A Recipe's JSON (field names options, vocab, sources, rows, tokens, fingerprint; a source's
// path, kind, rows, available, sha256, tokens) is recorded in bundle manifests and trace
// metadata; it is a file format and keeps these names. Rows a model generated from a file of
// prompts (package forge's GenerateRows) are recorded as one source of kind Generated, which
// Load does not read.
//
// # Conversations and overlap
//
// ReadConversations reads a .jsonl file's conversations, checked as Load checks them, without
// rendering them: the prompts that forge calib generate and forge trace --generate have a model
// answer. Overlaps (overlap.go) finds the rows of two sets that share a window of w consecutive
// tokens (OverlapWindow, 64, for forge quantize --eval-trace), leaving out windows that both
// sets repeat in several rows.
//
// Errors name the file and the problem (the line for .jsonl and .json) and wrap one of
// ErrSpec, ErrUnsupported, ErrFormat, ErrTooFewRows or ErrTokenRange.
package corpus
