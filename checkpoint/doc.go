// Package checkpoint opens a Hugging Face Qwen3.5 checkpoint directory as a
// model.Source (docs/model.md §2–3).
//
// It reads config.json with the text model nested under text_config (VLM
// wrapper) or flat (text-only class), applies the defaults of docs/model.md §2.1, and
// refuses missing or inconsistent fields by name. Weights come from
// model.safetensors or the shards of model.safetensors.index.json; names
// lose their model.language_model. / language_model.model. / model. prefix,
// the vision tower (model.visual.*) and MTP head (mtp.*) are skipped, and
// lm_head falls back to embed_tokens when tie_word_embeddings is set. Every
// tensor the config implies must be present with that exact shape and a
// float dtype (BF16, F16 or F32, per tensor); anything else of the text
// model is an error, never silently ignored.
package checkpoint
