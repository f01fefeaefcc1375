// Package safetensors reads and writes the Hugging Face safetensors format:
// the file every Qwen checkpoint ships its weights in, and the container forge
// exports its quantized bundles in. It exists so that the rest of forge sees
// validated tensor names, dtypes and shapes and zero-copy views of the data,
// and never a half-parsed or half-written file.
//
// # Layout
//
// A file is three consecutive parts (spec:
// https://huggingface.co/docs/safetensors, "Format"):
//
//	offset 0        8 bytes   N, an unsigned 64-bit little-endian integer: the header length
//	offset 8        N bytes   the header: UTF-8 JSON, optionally padded with trailing spaces
//	offset 8+N      rest      the data area: the tensors' bytes, packed
//
// The header is one JSON object. Each key is a tensor name, each value
//
//	{"dtype": "BF16", "shape": [512, 256], "data_offsets": [begin, end]}
//
// where begin and end are byte offsets relative to the start of the data area
// (not to the start of the file), end exclusive. One optional extra key,
// "__metadata__", maps to an object of string → string (transformers writes
// {"format": "pt"}). Tensor bytes are row-major (C order, last dimension
// fastest) and little-endian; dtype sizes are BF16 2, F16 2, F32 4, I8 1,
// U8 1, I16 2, I32 4, I64 8, BOOL 1 (one byte per element, 0 or 1; the
// value is not checked). The format's other dtypes (F64, U16, U32, U64, the
// F8 kinds) are rejected as unknown: no checkpoint forge reads uses them. A
// zero-dimensional shape [] is a scalar with one element; a shape with a zero
// dimension has no elements and an empty span.
//
// # What Open validates
//
// Everything below is checked before any tensor is handed out; each failure is
// an error wrapping [ErrFormat] that names the file, the tensor and the
// problem:
//
//   - the file holds at least the 8-byte length; N is not 0, not above
//     100 000 000 (the reference implementation's limit) and 8+N does not pass
//     the end of the file;
//   - the header is valid UTF-8 and valid JSON (encoding/json's json.Valid,
//     which also bounds nesting depth), a single object followed by nothing
//     but whitespace;
//   - no key appears twice, at the top level or inside an entry (encoding/json
//     would silently keep the last one, so the header is read token by token);
//   - each entry is an object with exactly the keys dtype (a known dtype
//     name), shape (an array of non-negative integers) and data_offsets (an
//     array of two non-negative integers);
//   - the element count (product of the shape) times the dtype size does not
//     overflow and equals end − begin; begin ≤ end; end ≤ the data area length;
//   - no two non-empty spans overlap. Gaps between spans, and bytes after the
//     last span, are allowed (the reference writer produces neither, but they
//     are harmless);
//   - "__metadata__" is null or an object of string → string.
//
// # Reading
//
// [Open] maps the file read-only (mmap), so opening is cheap for any size and
// [File.Bytes] and [File.Uint16] return views of the mapping without copying.
// Those views must not be written (the pages are read-only: a write faults)
// and must not be used after [File.Close]; nor may the file be truncated
// while it is open (reading a page past the new end faults, as with any
// mapping). Writers replace files by rename, as [Writer] does, which is safe. [File.Float32] and [File.Int32]
// return fresh slices.
//
// # Writing
//
// [Create] takes every tensor's name, dtype and shape up front, computes the
// offsets in the given order (packed, no gaps) and writes the header at once,
// so tensor data can then be streamed one tensor at a time through
// [Writer.WriteTensor], [Writer.WriteFloat32] or plain [Writer.Write]. The
// header is deterministic: "__metadata__" first with its keys sorted (omitted
// when empty), then the tensors in the given order, each written as
// {"dtype":…,"shape":…,"data_offsets":…}, then spaces so the data area
// starts at a multiple of DataAlign (64) bytes. The same input gives the same
// bytes. Data goes to a temporary file beside the destination
// (path + ".forge-tmp-<pid>-<random>", internal/durable; leftovers of killed
// processes are removed by the next write to the same path); [Writer.Close] syncs it, renames it over the
// destination and syncs the directory, so the destination is either the old
// file or the complete new one, never a partial write. The new file gets the
// old one's permissions, or 0644.
package safetensors
