//go:build goexperiment.simd

#include "textflag.h"

// Decode attention's dot products for AVX-512 hosts (attendScores,
// vec_simd.go): sixteen positions a pass, each score with the bits that
// attendScores' one-position loop gives it. Assembly because the Go
// compiler's code for that loop spent ~35 cycles a position on a Zen 5
// (spills, bounds checks, a horizontal sum that waits on each product);
// here a position costs its four fused multiply-adds per 64 columns and
// a share of one transposing sum per sixteen positions (BENCHMARKS.md).

// scorePerm puts the transposed sums of a pass in position order: lane
// 4k + m holds position k + 4m (see scores16x16).
DATA scorePerm<>+0(SB)/4, $0
DATA scorePerm<>+4(SB)/4, $4
DATA scorePerm<>+8(SB)/4, $8
DATA scorePerm<>+12(SB)/4, $12
DATA scorePerm<>+16(SB)/4, $1
DATA scorePerm<>+20(SB)/4, $5
DATA scorePerm<>+24(SB)/4, $9
DATA scorePerm<>+28(SB)/4, $13
DATA scorePerm<>+32(SB)/4, $2
DATA scorePerm<>+36(SB)/4, $6
DATA scorePerm<>+40(SB)/4, $10
DATA scorePerm<>+44(SB)/4, $14
DATA scorePerm<>+48(SB)/4, $3
DATA scorePerm<>+52(SB)/4, $7
DATA scorePerm<>+56(SB)/4, $11
DATA scorePerm<>+60(SB)/4, $15
GLOBL scorePerm<>(SB), RODATA|NOPTR, $64

// VPROLOGUE loads values4x16's and valuesI8x16's arguments (the values'
// stride still in elements).
#define VPROLOGUE \
	MOVQ o+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ v+16(FP), R8; \
	MOVQ n+24(FP), DX; \
	MOVQ stride+32(FP), R9; \
	MOVQ d+40(FP), BX; \
	MOVQ wstep+48(FP), R10; \
	SHLQ $2, BX; \
	LEAQ (SI)(R10*1), R11; \
	LEAQ (SI)(R10*2), R12; \
	LEAQ (R11)(R10*2), R13

// ZERO16 clears the accumulators Z0–Z15.
#define ZERO16 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

// ROW8 adds the products of 64 columns (q at Z16–Z19) of the key row at
// p + CX to a (columns 0–15 and 32–47) and b (16–31, 48–63), in column
// order: attendScores' two accumulators.
#define ROW8(p, a, b) \
	VFMADD231PS (p)(CX*1), Z16, a; \
	VFMADD231PS 64(p)(CX*1), Z17, b; \
	VFMADD231PS 128(p)(CX*1), Z18, a; \
	VFMADD231PS 192(p)(CX*1), Z19, b

// QUARTERS adds 128-bit quarters of x and y: d = [x.q0 + x.q2, x.q1 +
// x.q3, y.q0 + y.q2, y.q1 + y.q3] with lo, hi = $0x44, $0xEE (each
// position's 256-bit halves), or d = [x.q0 + x.q1, x.q2 + x.q3, y.q0 +
// y.q1, y.q2 + y.q3] with lo, hi = $0x88, $0xDD (its 128-bit halves, two
// positions a vector before).
#define QUARTERS(lo, hi, x, y, d) \
	VSHUFF32X4 lo, y, x, Z24; \
	VSHUFF32X4 hi, y, x, Z25; \
	VADDPS Z25, Z24, d

// PAIRS adds the even and odd lanes of x and y within each quarter: d =
// [x0 + x1, x2 + x3, y0 + y1, y2 + y3] per quarter (HADDPS's pairs).
#define PAIRS(x, y, d) \
	VSHUFPS $0x88, y, x, Z24; \
	VSHUFPS $0xDD, y, x, Z25; \
	VADDPS Z25, Z24, d

// ROWPTRS points R10–R15 and AX at the key rows after R8's (R9 bytes
// apart): R8 and those are the eight rows of a half pass.
#define ROWPTRS \
	LEAQ (R8)(R9*1), R10; \
	LEAQ (R8)(R9*2), R11; \
	LEAQ (R10)(R9*2), R12; \
	LEAQ (R8)(R9*4), R13; \
	LEAQ (R13)(R9*1), R14; \
	LEAQ (R13)(R9*2), R15; \
	LEAQ (R14)(R9*2), AX

// REDUCE8 sums each of the eight positions' a + b (Z0–Z7 and Z8–Z15) as
// storeScore does, as far as a half pass goes: quarter k of the result
// holds [p0, p1] of positions k and 4 + k, and it goes to Z20, the
// previous half's to Z21.
#define REDUCE8 \
	VADDPS Z8, Z0, Z0; \
	VADDPS Z9, Z1, Z1; \
	VADDPS Z10, Z2, Z2; \
	VADDPS Z11, Z3, Z3; \
	VADDPS Z12, Z4, Z4; \
	VADDPS Z13, Z5, Z5; \
	VADDPS Z14, Z6, Z6; \
	VADDPS Z15, Z7, Z7; \
	QUARTERS($0x44, $0xEE, Z0, Z1, Z0); \
	QUARTERS($0x44, $0xEE, Z2, Z3, Z2); \
	QUARTERS($0x44, $0xEE, Z4, Z5, Z4); \
	QUARTERS($0x44, $0xEE, Z6, Z7, Z6); \
	QUARTERS($0x88, $0xDD, Z0, Z2, Z0); \
	QUARTERS($0x88, $0xDD, Z4, Z6, Z4); \
	PAIRS(Z0, Z4, Z0); \
	VMOVAPS Z20, Z21; \
	VMOVAPS Z0, Z20

// STORE16 finishes a pass: p0 + p1 of the two halves (Z21, Z20), whose
// lane 4k + m is position k + 4m, put in position order and stored at DI.
#define STORE16 \
	PAIRS(Z21, Z20, Z0); \
	VPERMPS Z0, Z30, Z0; \
	VMOVUPS Z0, (DI)

// ROWF16 is ROW8 for a row of fp16 keys at p + CX (two bytes a column),
// widened exactly by VCVTPH2PS (as ldF16 widens them) into Z22–Z23 and
// Z26–Z27, with q's 64 columns at Z16–Z19: attendScoresF16's two
// accumulators, a for columns 0–15 and 32–47, b for the others.
#define ROWF16(p, a, b) \
	VCVTPH2PS (p)(CX*1), Z22; \
	VCVTPH2PS 32(p)(CX*1), Z23; \
	VCVTPH2PS 64(p)(CX*1), Z26; \
	VCVTPH2PS 96(p)(CX*1), Z27; \
	VFMADD231PS Z22, Z16, a; \
	VFMADD231PS Z23, Z17, b; \
	VFMADD231PS Z26, Z18, a; \
	VFMADD231PS Z27, Z19, b

// SCORES is the body of scores16x16 and scoresF16x16: row adds a key
// row's products of 64 columns (q at Z16–Z19; the row at its pointer +
// CX) to a position's two accumulators, kstep is the bytes of 64 keys,
// and the keys' stride and row are shifted left by shift to bytes. q
// moves on with SI (256 bytes a step), the keys with CX; 8(SP) holds the
// bytes of a row of q, 0(SP) the heads left.
#define SCORES(row, kstep, shift) \
	MOVQ k+16(FP), R8; \
	MOVQ stride+32(FP), R9; \
	MOVQ d+40(FP), BX; \
	SHLQ $shift, R9; \
	MOVQ BX, CX; \
	SHLQ $2, CX; \
	MOVQ CX, 8(SP); \
	SHLQ $shift, BX; \
	VMOVDQU32 scorePerm<>(SB), Z30; \
	CMPQ groups+24(FP), $0; \
	JLE sdone; \
	CMPQ heads+48(FP), $0; \
	JLE sdone; \
sgroup: \
	MOVQ q+8(FP), SI; \
	MOVQ w+0(FP), DI; \
	MOVQ heads+48(FP), CX; \
	MOVQ CX, 0(SP); \
shead: \
	MOVQ $2, DX; \
shalf: \
	ROWPTRS; \
	ZERO16; \
	XORQ CX, CX; \
scol: \
	VMOVUPS (SI), Z16; \
	VMOVUPS 64(SI), Z17; \
	VMOVUPS 128(SI), Z18; \
	VMOVUPS 192(SI), Z19; \
	row(R8, Z0, Z8); \
	row(R10, Z1, Z9); \
	row(R11, Z2, Z10); \
	row(R12, Z3, Z11); \
	row(R13, Z4, Z12); \
	row(R14, Z5, Z13); \
	row(R15, Z6, Z14); \
	row(AX, Z7, Z15); \
	ADDQ $256, SI; \
	ADDQ $kstep, CX; \
	CMPQ CX, BX; \
	JLT scol; \
	SUBQ 8(SP), SI; \
	REDUCE8; \
	LEAQ (R8)(R9*8), R8; \
	DECQ DX; \
	JNZ shalf; \
	STORE16; \
	MOVQ R9, CX; \
	SHLQ $4, CX; \
	SUBQ CX, R8; \
	ADDQ 8(SP), SI; \
	ADDQ wstep+56(FP), DI; \
	DECQ 0(SP); \
	JNZ shead; \
	MOVQ R9, CX; \
	SHLQ $4, CX; \
	ADDQ CX, R8; \
	ADDQ $64, w+0(FP); \
	DECQ groups+24(FP); \
	JNZ sgroup; \
sdone: \
	VZEROUPPER; \
	RET

// HEAD4 adds w_i[τ] (broadcast in p) times the 64 columns of v_τ in
// Z16–Z19 to head i's accumulators o0…o3: a product, then a sum, as
// attendValues (axpy's operations).
#define HEAD4(p, o0, o1, o2, o3) \
	VMULPS Z16, p, Z24; \
	VMULPS Z17, p, Z25; \
	VMULPS Z18, p, Z26; \
	VMULPS Z19, p, Z27; \
	VADDPS Z24, o0, o0; \
	VADDPS Z25, o1, o1; \
	VADDPS Z26, o2, o2; \
	VADDPS Z27, o3, o3

// OSTORE stores a head's four accumulators to its chunk of o at AX and
// moves AX on to the next head's.
#define OSTORE(o0, o1, o2, o3) \
	VMOVUPS o0, (AX); \
	VMOVUPS o1, 64(AX); \
	VMOVUPS o2, 128(AX); \
	VMOVUPS o3, 192(AX); \
	ADDQ BX, AX

// VALUES4 is the body of values4x16 and valuesI8x16 after their
// prologue (DI o, SI w_0, R11–R13 w_1…w_3, R8 the values' first column,
// DX n, R9 bytes between positions, BX bytes of a row of o): per chunk of
// 64 columns, load widens position τ's 64 values into Z16–Z19 from AX,
// scale turns the heads' weights (Z20–Z23) into the weights of those
// values (first readies it for the chunk's first position), and each head's four accumulators take its products, then its
// sums, in τ order; vstep is the bytes of 64 values.
#define VALUES4(load, first, scale, vstep) \
	TESTQ DX, DX; \
	JLE vdone; \
	XORQ CX, CX; \
vchunk: \
	ZERO16; \
	first; \
	MOVQ R8, AX; \
	XORQ R14, R14; \
	MOVQ DX, R15; \
vpos: \
	load; \
	VBROADCASTSS (SI)(R14*1), Z20; \
	VBROADCASTSS (R11)(R14*1), Z21; \
	VBROADCASTSS (R12)(R14*1), Z22; \
	VBROADCASTSS (R13)(R14*1), Z23; \
	scale; \
	HEAD4(Z20, Z0, Z1, Z2, Z3); \
	HEAD4(Z21, Z4, Z5, Z6, Z7); \
	HEAD4(Z22, Z8, Z9, Z10, Z11); \
	HEAD4(Z23, Z12, Z13, Z14, Z15); \
	ADDQ R9, AX; \
	ADDQ $4, R14; \
	DECQ R15; \
	JNZ vpos; \
	LEAQ (DI)(CX*1), AX; \
	OSTORE(Z0, Z1, Z2, Z3); \
	OSTORE(Z4, Z5, Z6, Z7); \
	OSTORE(Z8, Z9, Z10, Z11); \
	OSTORE(Z12, Z13, Z14, Z15); \
	ADDQ $vstep, R8; \
	ADDQ $256, CX; \
	CMPQ CX, BX; \
	JLT vchunk; \
vdone: \
	VZEROUPPER; \
	RET

// NOSCALE: float32 values have no scales to ready or apply.
#define NOSCALE

// VFIRST points R10 at the first position's value scale.
#define VFIRST MOVQ vs+56(FP), R10

// VSCALE multiplies the heads' weights by position τ's value scale at R10
// and moves R10 on to the next position's.
#define VSCALE \
	VBROADCASTSS (R10), Z24; \
	VMULPS Z24, Z20, Z20; \
	VMULPS Z24, Z21, Z21; \
	VMULPS Z24, Z22, Z22; \
	VMULPS Z24, Z23, Z23; \
	ADDQ vstride+64(FP), R10

// VLOAD32 loads position τ's 64 float32 values at AX.
#define VLOAD32 \
	VMOVUPS (AX), Z16; \
	VMOVUPS 64(AX), Z17; \
	VMOVUPS 128(AX), Z18; \
	VMOVUPS 192(AX), Z19

// VLOADI8 widens position τ's 64 int8 values at AX to float32 (exact,
// as ldI8).
#define VLOADI8 \
	VPMOVSXBD (AX), Z16; \
	VPMOVSXBD 16(AX), Z17; \
	VPMOVSXBD 32(AX), Z18; \
	VPMOVSXBD 48(AX), Z19; \
	VCVTDQ2PS Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VCVTDQ2PS Z18, Z18; \
	VCVTDQ2PS Z19, Z19

// func scores16x16(w, q, k unsafe.Pointer, groups, stride, d, heads, wstep int)
//
// For τ < 16·groups and each of heads query heads i (q_i at q + 4·d·i
// bytes, its scores at w + wstep·i bytes): w_i[τ] = q_i·k_τ, k_τ at k +
// 4·stride·τ bytes, d floats (a multiple of 64). The heads of a pass read
// its sixteen key rows while they are in L1 (the query heads of one KV
// head, which attendScores would read from L2 or further once each). Per
// position, as attendScores: a gathers the products of columns 64j …
// 64j+15 and 64j+32 … 64j+47 by fused multiply-adds in column order, b
// the others, and s = a + b is summed as storeScore sums it: h_j = s_j +
// s_{j+8}, g_j = h_j + h_{j+4}, then (g0 + g1) + (g2 + g3). A pass takes
// eight positions at a time into Z0–Z15 (a in Z0–Z7, b in Z8–Z15) and
// sums them by that tree across vectors: position pairs' 256-bit halves
// (QUARTERS $0x44/$0xEE), then 128-bit halves (QUARTERS $0x88/$0xDD:
// quarter k holds position k's g), then adjacent lanes (PAIRS): quarter k
// holds [p0, p1] of positions k and 4 + k. The two halves' vectors (Z21,
// Z20) meet in a last PAIRS, whose lane 4k + m is position k + 4m;
// VPERMPS by scorePerm orders them for one 64-byte store.
TEXT ·scores16x16(SB), NOSPLIT, $16-64
	SCORES(ROW8, 256, 2)

// func scoresF16x16(w, q, k unsafe.Pointer, groups, stride, d, heads, wstep int)
//
// scores16x16 for keys in fp16 (the int8 KV cache's): k_τ at k +
// 2·stride·τ bytes, d fp16 values (a multiple of 64). Per position, as
// attendScoresF16: a gathers columns 32j … 32j+15 (fused multiply-adds in
// column order), b columns 32j+16 … 32j+31, summed as storeScore sums.
TEXT ·scoresF16x16(SB), NOSPLIT, $16-64
	SCORES(ROWF16, 128, 1)

// func values4x16(o, w, v unsafe.Pointer, n, stride, d, wstep int)
//
// For four query heads i that read the same values (a KV head's):
// o_i[c] = Σ_τ w_i[τ]·v_τ[c] over τ < n, o_i at o + 4·d·i bytes, w_i at
// w + wstep·i bytes, v_τ at v + 4·stride·τ bytes, d floats (a multiple of
// 64). Per chunk of 64 columns, each head's four accumulators take every
// position's product and then its sum in τ order: attendValues'
// operations, so each head gets its bits, while a row of values is
// loaded once for the four.
TEXT ·values4x16(SB), NOSPLIT, $0-56
	VPROLOGUE
	SHLQ $2, R9 // bytes between positions
	VALUES4(VLOAD32, NOSCALE, NOSCALE, 256)

// func valuesI8x16(o, w, v unsafe.Pointer, n, stride, d, wstep int, vs unsafe.Pointer, vstride int)
//
// values4x16 for the int8 KV cache's values: v_τ at v + stride·τ bytes,
// d int8 values widened exactly to float32, each weight w_i[τ] times the
// position's scale at vs + 4·vstride·τ bytes first (attendValuesInt8's c,
// rounded as it rounds it).
TEXT ·valuesI8x16(SB), NOSPLIT, $0-72
	VPROLOGUE
	VALUES4(VLOADI8, VFIRST, VSCALE, 64)
