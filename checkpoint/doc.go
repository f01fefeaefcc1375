// Package checkpoint reads and writes Hugging Face Qwen3.5 checkpoint
// directories (docs/model.md §2–3).
//
// Open reads config.json with the text model nested under text_config (VLM
// wrapper) or flat (text-only class), applies the defaults of docs/model.md
// §2.1, and refuses missing or inconsistent fields by name. Weights come
// from model.safetensors or the shards of model.safetensors.index.json;
// names lose their model.language_model. / language_model.model. / model.
// prefix, the vision tower (model.visual.*) and MTP head (mtp.*) are
// skipped, and lm_head falls back to embed_tokens when tie_word_embeddings
// is set. Every tensor the config implies must be present with that exact
// shape and a float dtype (BF16, F16 or F32, per tensor); anything else of
// the text model is an error, never silently ignored. The result is a
// model.Source.
//
// Writer is the one way forge writes a checkpoint (Synth and the root's
// Dequantize use it): tensors declared up front in checkpoint order, names
// under the config's prefix, a single model.safetensors or
// model-0000k-of-0000n.safetensors shards split by a byte size with
// model.safetensors.index.json, metadata {"format": "pt"}, config.json and
// the tokenizer files beside them; the data streamed tensor by tensor
// (raw bytes, float32 values rounded to each tensor's dtype, or values
// converted from another dtype) into OUT.partial, checked to open with
// Open, and published by one rename (internal/outpath). Synth fills a
// Writer with a seeded random initialisation of any size.
package checkpoint
