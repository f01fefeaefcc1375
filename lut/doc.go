// Package lut is forge's quantized weight matrix: every storage format of
// docs/quantization.md §1 in one type, Matrix, multiplied straight from its
// packed indices, and the online block Hadamard rotation its inputs may go
// through (Hadamard), so that everything needed to apply a stored matrix
// is here, in the standard library only.
//
//	Ŵ[o,j] = s[o] · L_g(o)[I[o/d, j]][o mod d]        (LUT<b>, vector d×K; + pcs)
//	Ŵ[o,j] = s[o] · c[o,j],  c ∈ [−127, 127]            (INT8 per-channel)
//	y      = Ŵ·(x·M) + A·(B·(x·M))                      (optional rotation M, low rank A·B)
//
// W has shape [Cout, Cin] = [out, in] (rows are outputs), s are the fp16
// per-output-channel scales, L_g is the fp16 codebook of o's row group
// g(o) = ⌊o/G⌋ (one group when per-tensor), d the vector length along Cout
// (1 for scalar LUTs) and K = 2^b its number of entries.
//
// # Files
//
//	format.go     Format, ParseFormat (the seed's spellings), String, Size (byte accounting)
//	placement.go  Place: runs on the ANE / falls back to the CPU / cannot be expressed
//	pack.go       Pack, Unpack: the index bit stream below
//	matrix.go     Matrix, Parts (the stored arrays), New (validating), Dequantize, Rotation
//	hadamard.go   Hadamard, NewHadamard, NewHadamardSigns, HadamardBlock: the online block Hadamard
//	              rotation M = diag(D_b·H_n/√n), n = min(1024, width & −width), signs from forge's
//	              PCG(seed, "HADAMARD") or numpy's (SignSource; docs/quantization.md §3, docs/ane.md §3.3);
//	              Rotate (x·M) by a float32 fast Walsh–Hadamard transform
//	numpysigns.go NumpySigns: numpy's default_rng(seed).choice([-1, 1], n), step by step
//	              (SeedSequence, PCG64, Lemire), the reference pipeline's signs; testdata/numpy-signs.json
//	hadamard_inverse.go  RotateTranspose (x·Mᵀ), UnrotateWeights: folding a rotation back into weights
//	mul.go        Mul: rotation, worker-pool split, low-rank term; MulRows: a range of outputs, no pool
//	kernel_go.go  the portable kernels (every format and alignment)
//	kernel_simd.go, kernel_avx512.go   AVX-512 kernels (GOEXPERIMENT=simd, amd64)
//	kernel_avx2.go    AVX2 kernels of 4-bit LUTs and 2x16 for T ≤ 8, for CPUs without AVX-512
//	prefetch_amd64.s  PREFETCHT0 of a range of lines, for the T = 1 LUT kernels
//	rows_amd64.s      the T = 1 kernels of 4-bit LUTs and 2-vector 2x16, in assembly
//	tile_amd64.s      the T > 1 kernels of 4-bit LUTs and INT8, in assembly
//	reduce_amd64.h    the transposing eight-row lane reduction the T = 1 kernels share
//	int8act.go        int8 activations: Int8Input, QuantizeInput (PrepareInput + QuantizeRows), MulRowsInt8, MulInt8, the portable twin
//	int8act_simd.go, int8_amd64.s, quantize_amd64.s   their AVX-512 VNNI/VBMI quantizer (its vector work in assembly) and kernels (4-bit LUTs, 2x16)
//	int8_avx2_amd64.s, quantize_avx2.go   their AVX2 kernels (one, two or three rows of x) and quantizer, for CPUs without AVX-512
//	int8vert.go, int8vert_simd.go, int8vert_amd64.{h,s}, int8vert2_amd64.s   4-bit scalar and 2x16 LUTs' int8 products on vertical tiles (AVX-512 VNNI): layout, twin, kernels
//	hugebytes_linux.go  memory for the tiles, advised to take 2 MiB pages
//	panel.go          products of several rows where no fast kernel runs: widened panels through the dense GEMM
//
// # Stored arrays (Parts)
//
//	LUT    []uint16  [groups][K][d] fp16   groups = ⌈out/G⌉, or 1 per tensor; nil for INT8, bf16, fp16
//	Index  []byte    packed codes of the index matrix I [out/d][in] (below); INT8: int8 codes [out][in]
//	Scale  []uint16  [out] fp16            pcs, or the INT8 scales; nil for bf16, fp16
//	Weight []uint16  [out][in] bf16/fp16   unquantized formats only
//	LowRankA []uint16 [out][r], LowRankB []uint16 [r][in] fp16, optional (docs/quantization.md §5)
//
// Size (and Matrix.Bytes) is exactly the sum of these: ⌈(out/d)·in·b/8⌉ index
// bytes + 2·groups·K·d codebook bytes + 2·out scale bytes + 2·r·(out+in)
// factor bytes; for `vector 2x16 + pcs` that is out·in/4 + 64 + 2·out. Bits
// per weight are 8·bytes/(out·in).
//
// # Index bit layout
//
// The index matrix I [R][in] (R = out/d index rows; a vector code covers d
// consecutive output rows at one input column) is flattened row-major —
// code number k = r·in + j — and written as one little-endian bit stream of
// b-bit codes with no padding between rows:
//
//	bit i of the stream is bit (i mod 8) of byte ⌊i/8⌋   (least significant bit first)
//	code k occupies stream bits k·b … k·b+b−1, its least significant bit first
//	bits after the last code, up to the byte boundary, are zero (New rejects others)
//
// So for b = 4 byte n holds code 2n in its low nibble and code 2n+1 in its
// high nibble; for b = 2 byte n holds codes 4n…4n+3 from bit 0 up; for b = 1
// bit t of byte n is code 8n+t; b = 8 is one code per byte. Codes of 3 and 6
// bits straddle bytes:
//
//	b = 3:  byte 0 = c0 | c1<<3 | (c2&3)<<6
//	        byte 1 = c2>>2 | c3<<1 | c4<<4 | (c5&1)<<7
//	        byte 2 = c5>>1 | c6<<2 | c7<<5                   (8 codes per 3 bytes)
//	b = 6:  byte 0 = c0 | (c1&3)<<6
//	        byte 1 = c1>>2 | (c2&15)<<4
//	        byte 2 = c2>>4 | c3<<2                           (4 codes per 3 bytes)
//
// Each index row starts on a byte boundary whenever in·b is a multiple of 8
// (every real model shape); the fast kernels need that and the portable
// kernel does not. INT8 codes are int8 two's complement, one per byte,
// −128 not allowed.
//
// # Numerics and kernels
//
// Mul never forms the dense matrix. Per output row it sums
// L[code(o,j)]·x[j] in float32 from the decoded codes and multiplies by the
// scale once: y[o] = s[o]·Σ_j L[c]·x[j]. Results agree with the float64
// reference (Dequantize, then multiply) to float32 rounding. Dequantize
// itself is exact: s[o]·L[c] is the product of two fp16 values, which
// float32 represents exactly.
//
// The portable kernel (kernel_go.go) splits code bytes in place (1/2/4/8
// bits, aligned rows) or unpacks 256 codes at a time (3/6 bits, unaligned
// rows) and looks them up in the widened codebook. With
// GOEXPERIMENT=simd on an AVX-512 CPU the fast kernels run 1/2/4-bit scalar
// LUTs, 2-vector LUTs with ≤ 16 entries and INT8 when index rows are byte
// aligned: codes are decoded in registers and looked up with a 16-lane
// permute of the codebook (kernel_avx512.go explains the "phase layout" of
// x this needs). Decode steps (T = 1) stream eight weight rows at once
// (scalar LUTs also prefetch the next eight, prefetch_amd64.s); 4-bit
// scalar LUTs run every eight-row group of a call in one assembly call
// that also reduces, scales and stores the sums (lut4Groups), so a small
// matrix pays no Go code per group. For T > 1,
// 4-bit LUTs and INT8 run register-blocked assembly kernels: a pair of
// output rows, decoded in registers, times eight x rows (x interleaved
// four rows at a time, so that every x load is at a constant offset) with
// sixteen accumulators held in registers over a column chunk; 1- and
// 2-bit LUTs and leftover x rows decode eight rows a chunk at a time into
// an L1 buffer and use a 4×2 dot kernel. Either way the weights are read
// once per call.
// On a CPU with AVX2 and FMA but not AVX-512, 4-bit scalar LUTs and 2x16
// run kernel_avx2.go at T ≤ 8: 32 codes a block, looked up with two
// 8-lane permutes of the codebook's halves and a blend, times x in the
// phase layout, with FMA, one pass over the weights per row of x. 3-, 6-
// and 8-bit LUTs, other vector lengths and unaligned rows use the
// portable kernel at T < 4; at larger T every matrix without an AVX-512
// or AVX2 kernel is widened panel by panel into
// float32, Dequantize's values, and multiplied by the dense kernels of
// package tensor (panel.go), so the lookups are paid once for all rows.
// Every path is tested against the reference twin in every build.
//
// Int8 activations (int8act.go, decode's fast path): MulRowsInt8 takes
// x' quantized to int8 in groups of 32 columns (Int8Input, made once per
// input by QuantizeInput) and the 4-bit codebooks rounded to int8 (8
// bits, |ℓ| ≤ 127; 7 bits, |ℓ| ≤ 64, for 2-vector codebooks, and for
// scalar ones where the AVX2 kernels run: codebookBound), and sums exact
// integer products (VPERMB looks 64 codes up at once, VPDPBUSD multiplies
// and adds them four to a lane) with float32 scaling in a fixed order, so
// the AVX-512 kernels and the portable twin give the same bits. Several
// rows of x (verify blocks, batched decode steps) share each looked-up
// step of codes: with one or two rows one index row at a time (one
// stream of codes a core), with three or more four index rows at a time,
// so that each load of x meets four of them (int8rows_amd64.s); 2-vector
// matrices, from three rows of x on, two index rows at a time, each load
// of x meeting both components of both (vec2rows_amd64.s). On CPUs
// with AVX2 but not AVX-512 the kernels of int8_avx2_amd64.s give those
// bits too: VPSHUFB lookups, byte products summed by VPMADDUBSW and
// VPMADDWD, and the AVX-512 kernels' sums of (ℓ + 128)·q rebuilt from
// the lane sums 128·Σq per scale group (the one-row kernels multiply the
// looked-up ℓ + 64 by q from block sums started at 64·Σq; the multi-row ones give ℓ the
// sign of q with VPSIGNB and multiply |q|); one row of x at a time, or
// (scalar LUTs) three or two rows sharing each looked-up step of codes.
// Where the AVX-512 VNNI kernels run, a 4-bit scalar or 2x16 LUT matrix
// instead multiplies on vertical tiles (int8vert.go): its codes
// transposed once, at the first int8 product, into tiles of 16 index
// rows × 8 columns; one lookup of a tile serves every row of x (one to
// eight) with broadcast x operands, the int32 lanes being the outputs.
// Same integer sums, another fixed float32 order (group by group rather
// than per lane, then across lanes), used by all of that matrix's int8
// products and its twin, so a row's bits still do not depend on T or the
// range. A bundle's mapped codes leave the resident set once transposed
// (Parts.Evict).
// A width that is not a multiple of 128 is zero-padded to one (x' with
// zero columns, the kernels reading a padded copy of the index rows).
// The cost against Mul is bounded in the tests and measured on models by
// forge eval --act int8.
//
// The AVX2 code keeps legacy-SSE instructions (Go's scalar float code,
// struct copies, MOVD/MOVQ) out of the stretches between 256-bit
// instructions: on the AMD EPYC hosts of issue 12 each switch costs
// ~130 ns, so a float32 variable live across a vector loop (reloaded
// with MOVSS at the back edge) or a vector struct returned by value (a
// MOVUPS copy) cost more than the work (BENCHMARKS.md).
package lut
