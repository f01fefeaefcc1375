// Package bundle is forge's export: a directory that holds a quantized
// model and opens as a model.Source, so every command that runs a
// checkpoint also runs a bundle (design.md, "The export").
//
// Layout of a bundle directory:
//
//	config.json               copied from the source checkpoint
//	tokenizer.json, tokenizer_config.json, chat_template.jinja,
//	generation_config.json    copied when the source has them
//	model-0000k-of-0000n.safetensors
//	forge.json                the manifest, written last
//
// Tensor names in the shards are the text model's names without the HF
// prefix (model-qwen35.md §3.2). A quantized matrix "layers.0.mlp.up_proj.weight"
// is stored under its key "layers.0.mlp.up_proj" as
//
//	{key}.lut    F16 [groups, K, d]  codebooks (scalar and vector LUT formats)
//	{key}.idx    U8  [bytes]         packed indices, bit layout in lut's doc
//	             (INT8 per-channel: I8 [out, in] codes)
//	{key}.scale  F16 [out]           per-output-channel scales
//	{key}.lr_a   F16 [out, r]        optional low-rank factors, y += A(Bx)
//	{key}.lr_b   F16 [r, in]
//
// A matrix left unquantized (embeddings, in_proj_a/b, or format bf16) and
// every vector (norms, conv taps, A_log, dt_bias) is stored under its own
// name in its source dtype.
//
// The manifest forge.json records the bundle format version, forge's
// version, the source checkpoint's path and fingerprint (SHA-256 of its
// config.json and safetensors headers), the quantization method and seed,
// the format, shape, rank, bytes and bits per weight of every matrix, and
// the size and SHA-256 of every other file. Open refuses a directory with
// no manifest, a file of the wrong size or hash, or arrays that do not
// match their recorded format, and says which file and why.
//
// Writing is atomic at the directory level: everything goes to OUT.partial
// (removed first if a previous run was interrupted), shards are fsynced,
// the manifest is written last, and OUT.partial is renamed to OUT. An
// interrupted or failed export (including a full disk) leaves no OUT, and
// rerunning the command starts over cleanly.
package bundle
