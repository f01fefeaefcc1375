// Package layout writes and reads the reference pipeline's export: the
// directory of per-layer safetensors files its ANE builder, KL evaluator
// and block reconstruction consume (docs/reference-pipeline.md §9.3,
// docs/ane.md §3). forge export turns a bundle into one; forge import
// turns one (made by forge or by the reference) back into a bundle, with
// the tensors the layout does not hold taken from a Hugging Face
// checkpoint.
//
// # Files
//
// For a model of L layers (ℓ written with at least two digits, "%02d",
// as the reference does):
//
//	layer_ℓℓ.safetensors        the MLP of layer ℓ (required for every layer)
//	  metadata  basis            "online" (inputs Hadamard-rotated) or "plain"
//	            seed_in          online: seed of the gate/up input rotation (forge: 1000+ℓ)
//	            seed_mid         online: seed of the down input rotation    (forge: 2000+ℓ)
//	            block            online: the rotation's block width n (both inputs)
//	            sign_rng         online: the generator of the signs (below): "forge-pcg-v1" or
//	                             "numpy-default-rng-choice"; absent (the reference's) means numpy's
//	            gate.format, up.format, down.format
//	  tensors   gate.*, up.*, down.*                  (arrays below)
//	layer_ℓℓ_mixer.safetensors  the token mixer of layer ℓ (absent: nothing exported)
//	  metadata  kind             "linear_attention" or "full_attention" (must match config.json)
//	            format           the format of the mixer's matrices but attention k/v
//	            kv_format        the format of attention k_proj/v_proj (required on full
//	                             attention; on DeltaNet layers written when every attention
//	                             layer agrees, as the reference does, and ignored on reading)
//	  tensors   linear_attn.{in_proj_qkv,in_proj_z,out_proj}.*  or
//	            self_attn.{q_proj,k_proj,v_proj,o_proj}.*
//	lm_head.safetensors         the head (absent: not exported; never for tied embeddings)
//	  metadata  format
//	  tensors   lm_head.*
//	forge-export.json           written by forge export only (Provenance): forge's version,
//	                            the bundle, and the checkpoint forge import takes the rest from
//
// # Arrays of one matrix W [Cout, Cin] stored under key k
//
//	LUT<b> per-tensor + pcs    k.lut F16 [2^b, 1]   k.idx U8 [Cout, Cin]     k.scale F16 [Cout]
//	vector <d>x<K> + pcs       k.lut F16 [K, d]     k.idx U8 [Cout/d, Cin]   k.scale F16 [Cout]
//	INT8 per-channel           k.int8 I8 [Cout, Cin]                         k.scale F16 [Cout]
//	bf16, fp16                 k.weight BF16 / F16 [Cout, Cin]
//	optional, quantized only   k.lr_a F16 [Cout, r]  k.lr_b F16 [r, Cin]
//
// with one index per byte (not packed) and, as in lut's doc,
//
//	W[d·r+t, j] = scale[d·r+t] · lut[idx[r, j]][t] + (lr_a·lr_b)[d·r+t, j]     (t < d)
//	W[o, j]     = scale[o] · int8[o, j] + (lr_a·lr_b)[o, j]
//
// which is the reference's lut[idx].permute(0,2,1).reshape(Cout, Cin)·scale.
// The key is "gate", "up" or "down" in the layer file, the module path
// without "layers.ℓ." and ".weight" in the mixer file
// ("linear_attn.in_proj_qkv", "self_attn.k_proj"), and "lm_head". The
// format strings are the reference's (§1.1), which are forge's
// lut.Format.String spellings without groups.
//
// # What the layout cannot hold
//
// Plan refuses, naming the matrix: row-grouped codebooks (more than one
// group), 3- and 6-bit scalar LUTs, vectors longer than 16 or codebooks
// of more than 256 values (lut.Place: not expressible on the ANE), an
// unquantized matrix in float32, a rotation of any input but the MLP's,
// an MLP whose three matrices are not all rotated or all plain, gate and
// up rotated with different seeds, the two inputs with different blocks
// or sign generators, MLP low-rank factors under the online basis (forge applies them
// to the rotated input, the reference adds MLP factors in the original
// basis), and a mixer whose matrices (k/v apart) are not all in one
// format. Matrices forge keeps unquantized in their source dtype ("raw")
// are left out of the mixer and head files (the reference reads them from
// the checkpoint) and written as k.weight in the layer file, which always
// holds all three MLP matrices.
//
// # The rotation's signs
//
// Online Hadamard rotation M = diag(D_b·H_n/√n) (lut.Hadamard): forge's
// quantizer draws the signs D from PCG(seed, "HADAMARD") (lut.NewHadamard),
// the reference from numpy's default_rng(seed).choice([-1, 1], width),
// which lut.NumpySigns reproduces exactly. The same seeds name different
// matrices, so a layer file with basis online says which generator its
// signs come from (Rotation.Signs, lut.SignSource):
//
//	sign_rng absent                       numpy's: the reference's own exports (it writes no sign_rng)
//	sign_rng "numpy-default-rng-choice"   numpy's (SignRNGNumpy)
//	sign_rng "forge-pcg-v1"               forge's (SignRNGForge)
//	any other value                       refused by Open, naming the file (ErrInexpressible)
//
// Plan writes the generator of the bundle's rotations, which must be one
// per layer: "forge-pcg-v1" for what forge quantized, and
// "numpy-default-rng-choice" for rotations a bundle imported from the
// reference carries, so that exporting such a bundle again gives a
// directory that means what the reference's did. A builder that ignores
// sign_rng (the reference's) computes wrong MLPs from a forge-pcg-v1
// layer; forge export says so. Mixer and head inputs are never rotated.
//
// # Reading
//
// Open checks a whole directory against a model configuration before
// anything is built from it: the file names, each file's metadata (kind,
// formats, basis, seeds, block, sign generator), every tensor's presence,
// dtype and shape (no tensor the layout does not name), index values below
// the codebook size, INT8 codes in [−127, 127] and finite fp16 codebooks,
// scales and factors. Errors name the directory, the file and the tensor
// or metadata key, and wrap ErrLayout or ErrInexpressible; a damaged
// file is an error from package safetensors naming it, never a panic.
// Layout.Matrix then builds each lut.Matrix (indices packed as lut's doc
// says, rotation rebuilt by lut.NewHadamardSigns with the file's sign
// generator) from views of the mapped files.
package layout
