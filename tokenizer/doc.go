// Package tokenizer turns text and conversations into exactly the token ids a Hugging Face
// model was trained on, and ids back into text.
//
// It reads a tokenizer directory (Load): tokenizer.json, and when present tokenizer_config.json,
// chat_template.jinja, additional_chat_templates/*.jinja and generation_config.json.
//
// # Encoding
//
// Encode follows tokenizers' pipeline (tokenizer/mod.rs, added_vocabulary.rs):
//
//	text ─ added tokens with normalized=false, matched in the raw text    (added.go)
//	     ─ normalizer on the pieces between them: NFC, NFD, NFKC, NFKD   (normalizer.go)
//	     ─ added tokens with normalized=true, matched in normalized text
//	     ─ pre-tokenizer: Split steps, then ByteLevel                    (pretokenizer.go, pattern.go)
//	     ─ byte-level BPE on each word, with a word cache                (bpe.go)
//
// Added tokens, special or not, are found leftmost-longest and honour single_word, lstrip and
// rstrip with Unicode \w and \s as tokenizers does. The normalizers follow tokenizers'
// unicode-normalization-alignments rather than x/text where the two differ: its data is Unicode
// 9.0's (marks and decompositions added since are plain starters) and it orders and composes
// runs of combining marks of any length (x/text inserts U+034F after 30). The Split patterns of
// Qwen2/Qwen3, Llama 3 and GPT-2 use a `\s+(?!\S)` lookahead that Go's RE2 lacks; hand-written
// matchers (pattern.go) reproduce Oniguruma's backtracking choices and Unicode classes (\p{L},
// \p{N}, \s = White_Space), checked against a Go-regexp twin; \p{L} and \p{N} are Unicode
// 16.0's like the Oniguruma of tokenizers 0.23 (Go's tables are 15.0's; unicode16.go adds the
// difference). Other Split regexes run on Go's regexp after \s, \d, \w, \p{L} and \p{N} are
// rewritten to that meaning; a pattern RE2 cannot compile is refused with an error naming it.
// testdata/tokenizer/crosscheck-*.jsonl hold ids of tokenizers 0.23.2 for both tokenizers. Split behaviors Isolated, Removed, MergedWithPrevious, MergedWithNext
// and Contiguous, invert, and ByteLevel's add_prefix_space and use_regex are supported.
//
// The BPE model (bpe.go) maps each byte of a word to its token in GPT-2's byte alphabet
// (bytelevel.go) and merges pairs by rank, looked up in a map keyed by the pair of ids; short
// words merge by scanning, longer ones with a priority queue as tokenizers does, and words of
// over 4096 symbols in linear time and 8 bytes a symbol when the merges are monotone, each
// ranked after the merges making its parts (bpe_linear.go; checked at load, true of trained
// vocabularies such as Qwen3's). The three are twins under test.
// byte_fallback, unk_token, fuse_unk and ignore_merges behave as in tokenizers; merges may be
// written as "a b" strings or [a, b] pairs.
//
// Encode takes any bytes, bytes that are not UTF-8 going through the byte alphabet as
// themselves; EncodeChecked and EncodeStream refuse them (ErrInvalidUTF8, naming the offset),
// as tokenizers' str cannot hold them. EncodeStream hands the ids over in batches, so that
// encoding a large text holds no list of its ids.
//
// Anything else in tokenizer.json (other model types, normalizers, pre-tokenizers,
// post-processors or decoders, BPE dropout or subword prefixes, truncation, padding) is refused
// by Parse with an error wrapping ErrUnsupported that names the feature.
//
// # Decoding
//
// Decode concatenates each token's bytes (the ByteLevel decoder) and replaces ill-formed UTF-8
// as Rust's from_utf8_lossy does. A Stream decodes one id at a time and returns only complete
// characters, for token-by-token output.
//
// # Chat templates
//
// Chat renders a conversation as transformers' apply_chat_template does, with
// github.com/ardanlabs/jinja (which applies transformers' trim_blocks/lstrip_blocks and provides
// raise_exception, strftime_now and a key-order-preserving tojson). Messages, tools and kwargs
// are decoded from JSON into ordered template values (jsonvalue.go), so tool schemas and
// arguments print in their given key order; tool-call arguments reach the template as given,
// object or JSON string.
//
// Chat refuses, with ErrLimit, inputs over ChatOptions.MaxBytes (16 MiB) or nesting deeper
// than ChatOptions.MaxDepth (64 levels) before decoding them: rendering costs time quadratic in
// the depth.
//
// With ChatOptions.ParseArguments, tool-call arguments sent as JSON strings (OpenAI style) are
// decoded first, as vLLM does, for templates such as Qwen3.5's that iterate over them.
//
// Known differences of the jinja package from Python's Jinja2 (chat_test.go lists those the
// goldens meet): None prints as "" rather than "None" (Qwen3.5 prints null tool arguments so),
// and `'x' in None` is false where Python raises (Qwen3 renders an assistant message with
// content null as with ""); string + list concatenates where Python raises; trim, strip() and
// split() take Go's whitespace, without U+001C..U+001F, and lstrip()/rstrip() without
// arguments strip only space, tab, CR and LF; inside tojson, floats print in Go's shortest form
// (1.0 as 1, 1e6 as 1e+06), U+2028/U+2029 are escaped, and tojson with indent sorts keys. JSON
// integers beyond int64 reach templates as floats.
package tokenizer
