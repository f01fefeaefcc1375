// Package plan maps a model's matrices to quantization formats: a
// mixed-precision plan (docs/quantization.md §4) as JSON, with per-part defaults
// and per-matrix overrides, resolved for each checkpoint tensor name.
//
// Plan file (every field optional):
//
//	{
//	  "default": "LUT4 per-tensor + pcs",
//	  "parts":   {"mlp": "vector 2x16 + pcs", "gdn": "LUT4 per-tensor + pcs",
//	              "attn": "LUT4 per-tensor + pcs", "kv": "INT8 per-channel",
//	              "head": {"format": "LUT4 per-tensor + pcs", "rank": 0}},
//	  "matrices": {"23.gate": "LUT4 per-tensor + pcs", "0.mixer": {"format": "LUT4 per-tensor + pcs", "rank": 64}}
//	}
//
// A value is a format name (lut.ParseFormat spellings) or an object
// {"format", "rank"} (rank: low-rank correction, docs/quantization.md §5).
// Parts (docs/quantization.md §4.1): mlp (gate/up/down), gdn (DeltaNet in_proj_qkv, in_proj_z,
// out_proj), attn (attention q and o), kv (attention k and v), head.
// Matrix keys are LAYER.NAME with NAME one of gate, up, down, mlp (all
// three), mixer (the layer's quantized mixer projections: qkv/z/out or
// q/k/v/o), qkv, z, out, q, k, v, o, kv (k and v); and "head". The most
// specific entry wins: a matrix key over a part default over "default".
// A key that names no matrix of the model is an error (Check), not
// ignored.
package plan
