// Package bundle is forge's export: a directory that holds a quantized
// model and opens as a model.Source, so every command that runs a
// checkpoint also runs a bundle (docs/architecture.md §5).
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
// prefix (docs/model.md §3.2). A quantized matrix "layers.0.mlp.up_proj.weight"
// is stored under its key "layers.0.mlp.up_proj" as
//
//	{key}.lut    F16 [groups, K, d]  codebooks (scalar and vector LUT formats)
//	{key}.pad    U8  [1…63]          zeros, only where needed so that idx
//	                                 starts on a 64-byte line of the file
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
// Bundles written before the padding (2026-12-04) open as before, with
// most index arrays 24 bytes past a line; Misaligned counts them, and the
// runtime commands warn that such a bundle decodes slower than the same
// weights written again.
//
// The manifest forge.json records the bundle format version, forge's
// version, the source checkpoint's path and fingerprint (SHA-256 of its
// config.json and safetensors headers), the quantization method and seed,
// the format, shape, rank, raw flag, rotation, bytes and bits per weight of
// every matrix (the model's matrices, quantized or raw; vectors are not
// listed), the size and SHA-256 of every other file, and (version 2) its
// own content hash.
//
// # Integrity
//
// Open refuses a bundle, with an error naming the file, the matrix or
// tensor, and the field, unless all of the following hold, checked in this
// order:
//
//  1. forge.json parses, has format_version 1 or 2, lists files and no
//     matrix twice; a version 2 manifest has content_sha256, a version 1
//     manifest has none.
//  2. Every listed file has its recorded size and SHA-256, and config.json
//     is among them. The hashes cover the shards, their headers included.
//  3. Facts (version 2). Each shard's safetensors "__metadata__" holds
//     "format": "forge", "format_version": "2" and, for each matrix stored
//     in the shard, "matrix:NAME" → the JSON object {"format", "shape",
//     "rank" (omitted when 0), "raw" (omitted when false), "rotation"
//     {"kind", "seed", "block", "signs" (omitted for forge's; "Rotation
//     signs" below)} (omitted when none)}: every fact the model is
//     computed from besides the arrays themselves. Open compares each
//     matrix's facts in forge.json with its shard's field by field
//     ("matrix \"layers.3.mlp.up_proj.weight\": rotation seed 1004, the
//     shard model-00001-of-00002.safetensors says 1003"), and refuses facts
//     for a matrix forge.json does not list (a matrix dropped from it), a
//     matrix no shard records, and a shard whose format_version is not the
//     manifest's (so a version 2 bundle cannot be passed off as version 1 to
//     skip these checks). So the facts are covered by a shard's SHA-256: to
//     change one, both forge.json and the shard must be edited and the
//     shard's hash updated.
//  4. Accounting (both versions). config.json (hashed) gives the model's
//     tensors (model.Tensors). Every listed matrix is one of the model's
//     matrices with the model's shape; its format, rank and raw flag are
//     consistent (a raw matrix is bf16, f16 or f32 with no rank and no
//     rotation); a rotation's "signs" is absent or "numpy"; it is stored
//     as exactly the tensors they call for, with those dtypes and shapes,
//     in the shard that records its facts; and its bytes and bpw equal
//     those recomputed from its format, shape and rank (lut.Format.Size
//     and BitsPerWeight; out·in·dtype size for a raw matrix, bpw
//     8·bytes/(out·in)). Every matrix the model needs is listed,
//     every vector it needs is a float tensor of its shape, and every tensor
//     in the shards belongs to a listed matrix or a model vector.
//  5. Finite values. The model's vectors (norms, conv taps, A_log, dt_bias)
//     and each quantized matrix's codebooks, scales and low-rank factors
//     hold no NaN or infinity (error: the tensor and its first bad element,
//     row-major). These are small and reach every output. Dense weights
//     (raw matrices such as the embeddings, bf16/fp16 matrices) are not
//     scanned: they are most of the bytes, and a bad value in them reaches
//     only the outputs that use it, where the runtime check of the logits
//     reports it.
//  6. Every matrix builds (lut.New): arrays of exactly the size its format
//     calls for, zero padding bits, INT8 codes in range, a rotation of kind
//     "hadamard" whose block is lut.HadamardBlock of the width.
//  7. Content hash (version 2). content_sha256 is the SHA-256 of the
//     manifest's canonical content (Manifest.ContentHash: encoding/json's
//     compact encoding of the parsed manifest with content_sha256 empty;
//     reformatting forge.json does not change it). Checked last, it catches
//     edits of what steps 3 and 4 do not cross-check: source, quantization,
//     forge_version, held-out SNRs. Those do not change the model's outputs,
//     but inspect and eval print them, and a silent edit would make reports
//     lie. It is there rather than a cross-check because nothing else holds
//     those values.
//
// These hashes detect accidental and naive edits, not a deliberate forgery:
// whoever edits the files can recompute every hash (there is no signature).
//
// # Versions
//
// Version 2 (this package writes it) adds the facts in the shards'
// metadata and content_sha256. Version 1 bundles, written before, still
// open and compute the same outputs (testdata/v1-tiny, TestV1); for them
// Open runs every check above except 3 and 7, so an edit of a version 1
// manifest that keeps bytes, bpw, shapes and tensors consistent (a rotation
// seed, say) cannot be detected.
//
// # Rotation signs
//
// A rotation's random signs come from its seed by one of two generators
// (lut.SignSource), named by the rotation's "signs": absent for forge's
// own, PCG(seed, "HADAMARD") (lut.NewHadamard), which is every rotation
// forge's quantizer makes and every bundle written before the key
// existed, so those bundles read unchanged and forge's keep their bytes;
// "numpy" for numpy's default_rng(seed).choice([-1, 1], in)
// (lut.NewHadamardSigns with lut.SignsNumpy), the reference pipeline's,
// which forge import brings in (docs/ane.md §3.3). Any other value is
// refused, naming the bundle and the matrix. A forge that predates the
// key refuses a bundle that has it (the shard facts are decoded strictly,
// and the content hash does not match without it) rather than computing
// it with the wrong signs; format_version stays 2.
//
// # The matrix codec and the work directory
//
// EncodeMatrix and DecodeMatrix turn a lut.Matrix into its Facts and its
// arrays, in the layout above, and back (checking both); the Writer, Open
// and WorkDir all go through them. WorkDir is a bundle in progress:
// OUT.work holds the matrices a quantize run has finished, one safetensors
// file per matrix with the same tensors a shard would hold and, in its
// metadata, the facts, the held-out SNRs and a SHA-256 over them and the
// arrays (checked on load; a damaged file is removed and made again), so
// that an interrupted run resumes and the bundle is assembled from them.
// The work files of earlier forge versions (generic array names, no facts)
// are not read: they count as damaged and are made again.
//
// # Unfinished bundles
//
// Incomplete recognises a directory without forge.json that is the remains
// of a bundle (an OUT.partial, shards with forge's metadata), so that
// callers can say so rather than open it as a Hugging Face checkpoint.
//
// Writing is atomic at the directory level: everything goes to OUT.partial,
// which carries forge's marker (internal/outpath; a leftover of a run that
// was killed is removed first, a directory forge did not make is refused),
// each shard is streamed with its header first — every matrix's facts,
// rotations included, are declared up front in the Items — and fsynced; the
// manifest is written last, and OUT.partial is renamed to OUT (an existing
// forge bundle it replaces is swapped out atomically). An interrupted or
// failed export (including a full disk) leaves no OUT, and rerunning the
// command starts over cleanly.
package bundle
