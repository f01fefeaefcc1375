// Package plan maps a model's matrices to quantization formats: a
// mixed-precision plan (docs/quantization.md §4) as JSON, with per-part defaults
// and per-matrix overrides, resolved for each checkpoint tensor name; the
// sweep measurement file (Sweep) and the budgeted planner that chooses a
// plan from it (Solve).
//
// Plan file (every field optional):
//
//	{
//	  "default": "LUT4 per-tensor + pcs",
//	  "parts":   {"mlp": "vector 2x16 + pcs", "gdn": "LUT4 per-tensor + pcs",
//	              "attn": "LUT4 per-tensor + pcs", "kv": "INT8 per-channel",
//	              "head": {"format": "LUT4 per-tensor + pcs", "rank": 0}},
//	  "matrices": {"23.gate": "LUT4 per-tensor + pcs", "0.mixer": {"format": "LUT4 per-tensor + pcs", "rank": 64}},
//	  "basis":   {"3": "online", "5": "plain"},
//	  "prediction": {…}, "sweep": {…}
//	}
//
// A value is a format name (lut.ParseFormat spellings) or an object
// {"format", "rank"} (rank: low-rank correction, docs/quantization.md §5).
// Parts (docs/quantization.md §4.1): mlp (gate/up/down), gdn (DeltaNet in_proj_qkv, in_proj_z,
// out_proj), attn (attention q and o), kv (attention k and v), head.
// Matrix keys are LAYER.NAME with NAME one of gate, up, down, mlp (all
// three), mixer (the layer's quantized mixer projections: qkv/z/out or
// q/k/v/o), mixer-kv (the same less attention k/v: qkv/z/out or q/o),
// qkv, z, out, q, k, v, o, kv (k and v); and "head". The most specific
// entry wins: a matrix key over a part default over "default"; within a
// layer k over kv over mixer, q over mixer-kv over mixer. A key that
// names no matrix of the model is an error (Check), not ignored.
// "basis" sets per layer whether the MLP inputs are Hadamard-rotated
// ("online") or not ("plain"), over the recipe's Hadamard switch
// (Recipe.Rotation). "prediction" and "sweep" are written by the planner
// (Solution.Plan): what it predicted, and the sweep, objective and budget
// it chose from; quantize refuses a plan whose sweep measured another
// model (Plan.CheckModel).
//
// The reference's flat plans (docs/reference-pipeline.md §1.1) are read
// too: an object whose keys look like "<layer>.<name>",
//
//	{"23.gate": "LUT4 per-tensor + pcs", "5.mixer": "vector 2x16 + pcs", "7.down": "bf16", "3.basis": "online"}
//
// where gate, up and down are the matrix keys of the same names,
// "<i>.mixer" is forge's "<i>.mixer-kv" (the reference keeps k/v at its
// KV format whatever the mixer's) and "<i>.basis" is basis[i]. Beside
// flat keys only "default" and "parts" may appear, to state what the
// reference took from its environment (FORMAT, MIXER, KV_FMT, HEAD).
//
// The planner (Solve) reads a whole sweep: for each unit (a matrix, part,
// layer or band) and candidate (format and rank), the unit's exact bytes
// and its ΔKL measured alone. Under a Budget (bits per weight of the
// units, or the bundle's size) it picks one candidate per unit to
// minimize the summed ΔKL (or 99th percentile) by an exact dynamic
// program over bytes, and reports a lower bound on the optimum beside the
// plan it found, so the cost of the program's resolution is visible.
package plan
