//go:build goexperiment.simd

#include "textflag.h"

// T > 1 register kernels (kernel_simd.go, tiledRows: the drivers and their
// bounds guarantees). One call runs one column chunk (nb 16-byte code
// blocks from byte off of each row) of np pairs of output rows, pp[0…np),
// for a tile of four or eight x rows, adding to the partial sums of each
// pair (acc[p][k][t]: row k of pair p times x row t, 16 lanes).
//
// A pair (tilePair: tables ta, tb, code rows wa, wb; 32 bytes) is two
// index rows with a table each: two scalar 4-bit LUT rows, one 2-vector
// row (wa = wb) with its two component tables, or two INT8 code rows (no
// tables). Weights are decoded in registers (the phase layout of
// kernel_avx512.go: VPMOVZXBD, VPSRLD, VPERMPS; INT8: VPMOVSXBD,
// VCVTDQ2PS) and never go through memory. A pair's 16 (or 8) accumulators
// stay in Z0–Z15 for the whole chunk and take the FMAs in place
// (VFMADD231PS); each x vector is loaded once per block and serves both
// rows. The next block is decoded (into Z20–Z23) while the current one is
// multiplied, and the next pair's first block while the last one is, so
// that the decode latency (about 15 cycles) never stalls the FMAs: with
// 32 FMAs per block the out-of-order window does not reach far enough to
// hide it (measured in L1, one core: 2.9–3.1 G FMAs/s decoding each block
// just before its FMAs, 3.4–3.5 this way, of a 3.6 peak).
//
// x is in tile layout (mulJob.xq): 16-float vector v of tile row t at
// x + 64·(4v + t); for 4-bit codes the two phases of block b are vectors
// 2b and 2b+1 (x + 512·b and x + 512·b + 256), for INT8 block b is vector
// b. Eight x rows are two tiles, x0 and x1 (addressed as x0 + AX).
//
// Bound: per block and pair 2·P·(x rows) FMAs (32 for 4-bit codes and
// eight x rows), one 512-bit FMA per cycle on Zen 4; the permutes,
// expansions and shifts run on other pipes (measured: 16 FMAs and 4
// VPERMPS issue in 16 cycles).
//
// Registers: Z0–Z15 accumulators (Zk·8+t is acc[k][t]), Z16–Z19 the
// current block's weights (rows a, b of phase 0, then of phase 1), Z20–
// Z23 the next block's, Z24–Z27 x, Z28–Z29 the next pair's tables, Z30–
// Z31 the tables. R10 the pair, R11 pairs left, R12 off, R13 nb, BX x0,
// AX x1 − x0, R8 x of the block, SI/DI codes of rows a/b, CX blocks left,
// DX acc of the pair, R9 (and CX between pairs) scratch.

// LDACC8 and STACC8 load and store acc[0][0…3] and acc[1][0…3] (x rows
// 0–3: Z0–Z3, Z8–Z11); LDACC16 and STACC16 all 16.
#define LDACC8 \
	VMOVUPS 0(DX), Z0; VMOVUPS 64(DX), Z1; VMOVUPS 128(DX), Z2; VMOVUPS 192(DX), Z3; \
	VMOVUPS 512(DX), Z8; VMOVUPS 576(DX), Z9; VMOVUPS 640(DX), Z10; VMOVUPS 704(DX), Z11

#define STACC8 \
	VMOVUPS Z0, 0(DX); VMOVUPS Z1, 64(DX); VMOVUPS Z2, 128(DX); VMOVUPS Z3, 192(DX); \
	VMOVUPS Z8, 512(DX); VMOVUPS Z9, 576(DX); VMOVUPS Z10, 640(DX); VMOVUPS Z11, 704(DX)

#define LDACC16 \
	LDACC8; \
	VMOVUPS 256(DX), Z4; VMOVUPS 320(DX), Z5; VMOVUPS 384(DX), Z6; VMOVUPS 448(DX), Z7; \
	VMOVUPS 768(DX), Z12; VMOVUPS 832(DX), Z13; VMOVUPS 896(DX), Z14; VMOVUPS 960(DX), Z15

#define STACC16 \
	STACC8; \
	VMOVUPS Z4, 256(DX); VMOVUPS Z5, 320(DX); VMOVUPS Z6, 384(DX); VMOVUPS Z7, 448(DX); \
	VMOVUPS Z12, 768(DX); VMOVUPS Z13, 832(DX); VMOVUPS Z14, 896(DX); VMOVUPS Z15, 960(DX)

// X4 adds the four x vectors at off(R8)(AX*s), off+64, off+128 and off+192
// (tile rows 0–3; s = 0: tile x0, s = 1: tile x1) times wa to the
// accumulators a0…a3 and times wb to b0…b3.
#define XFMA(addr, tmp, wa, wb, acca, accb) \
	VMOVUPS addr, tmp; \
	VFMADD231PS tmp, wa, acca; \
	VFMADD231PS tmp, wb, accb

#define X4A(off, wa, wb, a0, a1, a2, a3, b0, b1, b2, b3) \
	XFMA(off+0(R8), Z24, wa, wb, a0, b0); \
	XFMA(off+64(R8), Z25, wa, wb, a1, b1); \
	XFMA(off+128(R8), Z26, wa, wb, a2, b2); \
	XFMA(off+192(R8), Z27, wa, wb, a3, b3)

#define X4B(off, wa, wb, a0, a1, a2, a3, b0, b1, b2, b3) \
	XFMA(off+0(R8)(AX*1), Z24, wa, wb, a0, b0); \
	XFMA(off+64(R8)(AX*1), Z25, wa, wb, a1, b1); \
	XFMA(off+128(R8)(AX*1), Z26, wa, wb, a2, b2); \
	XFMA(off+192(R8)(AX*1), Z27, wa, wb, a3, b3)

// LUT8 and LUT4X multiply one decoded 4-bit block (Z16–Z19) with eight
// and four x rows; I8X8 and I8X4 one INT8 block (Z16, Z17).
#define LUT8 \
	X4A(0, Z16, Z17, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11); \
	X4B(0, Z16, Z17, Z4, Z5, Z6, Z7, Z12, Z13, Z14, Z15); \
	X4A(256, Z18, Z19, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11); \
	X4B(256, Z18, Z19, Z4, Z5, Z6, Z7, Z12, Z13, Z14, Z15)

#define LUT4X \
	X4A(0, Z16, Z17, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11); \
	X4A(256, Z18, Z19, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11)

#define I8X8 \
	X4A(0, Z16, Z17, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11); \
	X4B(0, Z16, Z17, Z4, Z5, Z6, Z7, Z12, Z13, Z14, Z15)

#define I8X4 \
	X4A(0, Z16, Z17, Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11)

// DEC4 decodes the 16-byte blocks at a and b with tables ta and tb into
// d0 (row a, phase 0), d1 (row b, phase 0), d2, d3 (phase 1).
#define DEC4(a, b, ta, tb, d0, d1, d2, d3) \
	VPMOVZXBD a, d0; \
	VPMOVZXBD b, d1; \
	VPSRLD $4, d0, d2; \
	VPSRLD $4, d1, d3; \
	VPERMPS ta, d0, d0; \
	VPERMPS tb, d1, d1; \
	VPERMPS ta, d2, d2; \
	VPERMPS tb, d3, d3

// DECI8 converts the 16 int8 codes at a and b to d0 and d1.
#define DECI8(a, b, d0, d1) \
	VPMOVSXBD a, d0; \
	VPMOVSXBD b, d1; \
	VCVTDQ2PS d0, d0; \
	VCVTDQ2PS d1, d1

// ARGS loads the arguments shared by the four kernels, and returns if
// np ≤ 0 or nb ≤ 0.
#define ARGS(done) \
	MOVQ pp+0(FP), R10; \
	MOVQ np+8(FP), R11; \
	MOVQ off+16(FP), R12; \
	MOVQ nb+24(FP), R13; \
	MOVQ x0+32(FP), BX; \
	TESTQ R11, R11; \
	JLE done; \
	TESTQ R13, R13; \
	JLE done

// PAIR points SI and DI at the current pair's codes (R10: wa at 16, wb
// at 24) from byte off; TABS loads its tables (ta at 0, tb at 8).
#define PAIR \
	MOVQ 16(R10), SI; ADDQ R12, SI; \
	MOVQ 24(R10), DI; ADDQ R12, DI

#define TABS \
	MOVQ 0(R10), R9; VMOVUPS (R9), Z30; \
	MOVQ 8(R10), R9; VMOVUPS (R9), Z31

// DEC4NEXT decodes the next pair's first block (pair at 32(R10)) with its
// tables (into Z28, Z29) into Z20–Z23.
#define DEC4NEXT \
	MOVQ 32(R10), R9; VMOVUPS (R9), Z28; \
	MOVQ 40(R10), R9; VMOVUPS (R9), Z29; \
	MOVQ 48(R10), R9; \
	MOVQ 56(R10), CX; \
	DEC4((R9)(R12*1), (CX)(R12*1), Z28, Z29, Z20, Z21, Z22, Z23)

// NEXT4 makes the decoded next block (Z20–Z23) current.
#define NEXT4 \
	VMOVAPS Z20, Z16; VMOVAPS Z21, Z17; VMOVAPS Z22, Z18; VMOVAPS Z23, Z19

// func lut4Tile8(pp *[tileO / 2]tilePair, np, off, nb int, x0, x1 unsafe.Pointer, acc *tileAcc)
//
// acc[p][k][t] += lanes of Σ over blocks [0, nb) from byte off of pair p's
// row k (4-bit codes) times x row t (t < 4: tile x0, row t; t ≥ 4: tile
// x1, row t−4), for p < np.
TEXT ·lut4Tile8(SB), NOSPLIT, $0-56
	ARGS(l8done)
	MOVQ x1+40(FP), AX
	SUBQ BX, AX
	MOVQ acc+48(FP), DX
	TABS
	PAIR
	DEC4((SI), (DI), Z30, Z31, Z16, Z17, Z18, Z19)

l8pair:
	LDACC16
	MOVQ BX, R8
	MOVQ R13, CX

l8loop:
	DECQ CX
	JZ l8last
	DEC4(16(SI), 16(DI), Z30, Z31, Z20, Z21, Z22, Z23)
	LUT8
	NEXT4
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $512, R8
	JMP l8loop

l8last:
	DECQ R11
	JZ l8final
	DEC4NEXT
	LUT8
	STACC16
	VMOVAPS Z28, Z30
	VMOVAPS Z29, Z31
	NEXT4
	ADDQ $32, R10
	ADDQ $1024, DX
	PAIR
	JMP l8pair

l8final:
	LUT8
	STACC16

l8done:
	VZEROUPPER
	RET

// func lut4Tile4(pp *[tileO / 2]tilePair, np, off, nb int, x0 unsafe.Pointer, acc *tileAcc)
//
// lut4Tile8 for the four x rows of tile x0 (acc[p][k][t], t < 4).
TEXT ·lut4Tile4(SB), NOSPLIT, $0-48
	ARGS(l4done)
	MOVQ acc+40(FP), DX
	TABS
	PAIR
	DEC4((SI), (DI), Z30, Z31, Z16, Z17, Z18, Z19)

l4pair:
	LDACC8
	MOVQ BX, R8
	MOVQ R13, CX

l4loop:
	DECQ CX
	JZ l4last
	DEC4(16(SI), 16(DI), Z30, Z31, Z20, Z21, Z22, Z23)
	LUT4X
	NEXT4
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $512, R8
	JMP l4loop

l4last:
	DECQ R11
	JZ l4final
	DEC4NEXT
	LUT4X
	STACC8
	VMOVAPS Z28, Z30
	VMOVAPS Z29, Z31
	NEXT4
	ADDQ $32, R10
	ADDQ $1024, DX
	PAIR
	JMP l4pair

l4final:
	LUT4X
	STACC8

l4done:
	VZEROUPPER
	RET

// DECI8NEXT converts the next pair's first blocks into Z20, Z21; NEXT2
// makes them current.
#define DECI8NEXT \
	MOVQ 48(R10), R9; \
	MOVQ 56(R10), CX; \
	DECI8((R9)(R12*1), (CX)(R12*1), Z20, Z21)

#define NEXT2 \
	VMOVAPS Z20, Z16; VMOVAPS Z21, Z17

// func i8Tile8(pp *[tileO / 2]tilePair, np, off, nb int, x0, x1 unsafe.Pointer, acc *tileAcc)
//
// lut4Tile8 for pairs of INT8 code rows (16 codes per block, the tables
// unused).
TEXT ·i8Tile8(SB), NOSPLIT, $0-56
	ARGS(i8done)
	MOVQ x1+40(FP), AX
	SUBQ BX, AX
	MOVQ acc+48(FP), DX
	PAIR
	DECI8((SI), (DI), Z16, Z17)

i8pair:
	LDACC16
	MOVQ BX, R8
	MOVQ R13, CX

i8loop:
	DECQ CX
	JZ i8last
	DECI8(16(SI), 16(DI), Z20, Z21)
	I8X8
	NEXT2
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $256, R8
	JMP i8loop

i8last:
	DECQ R11
	JZ i8final
	DECI8NEXT
	I8X8
	STACC16
	NEXT2
	ADDQ $32, R10
	ADDQ $1024, DX
	PAIR
	JMP i8pair

i8final:
	I8X8
	STACC16

i8done:
	VZEROUPPER
	RET

// func i8Tile4(pp *[tileO / 2]tilePair, np, off, nb int, x0 unsafe.Pointer, acc *tileAcc)
//
// i8Tile8 for the four x rows of tile x0.
TEXT ·i8Tile4(SB), NOSPLIT, $0-48
	ARGS(i4done)
	MOVQ acc+40(FP), DX
	PAIR
	DECI8((SI), (DI), Z16, Z17)

i4pair:
	LDACC8
	MOVQ BX, R8
	MOVQ R13, CX

i4loop:
	DECQ CX
	JZ i4last
	DECI8(16(SI), 16(DI), Z20, Z21)
	I8X4
	NEXT2
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $256, R8
	JMP i4loop

i4last:
	DECQ R11
	JZ i4final
	DECI8NEXT
	I8X4
	STACC8
	NEXT2
	ADDQ $32, R10
	ADDQ $1024, DX
	PAIR
	JMP i4pair

i4final:
	I8X4
	STACC8

i4done:
	VZEROUPPER
	RET

// sumIdx puts sumTile's transposed sums in natural order (see there).
DATA sumIdx<>+0(SB)/4, $0
DATA sumIdx<>+4(SB)/4, $2
DATA sumIdx<>+8(SB)/4, $1
DATA sumIdx<>+12(SB)/4, $3
DATA sumIdx<>+16(SB)/4, $8
DATA sumIdx<>+20(SB)/4, $10
DATA sumIdx<>+24(SB)/4, $9
DATA sumIdx<>+28(SB)/4, $11
DATA sumIdx<>+32(SB)/4, $4
DATA sumIdx<>+36(SB)/4, $6
DATA sumIdx<>+40(SB)/4, $5
DATA sumIdx<>+44(SB)/4, $7
DATA sumIdx<>+48(SB)/4, $12
DATA sumIdx<>+52(SB)/4, $14
DATA sumIdx<>+56(SB)/4, $13
DATA sumIdx<>+60(SB)/4, $15
GLOBL sumIdx<>(SB), RODATA|NOPTR, $64

// HALF256 adds the 256-bit halves of a and b: d = [a.lo + a.hi, b.lo +
// b.hi] (128-bit quarters q: VSHUFF32X4 $0x44 takes q0 q1 of each, $0xEE
// q2 q3).
#define HALF256(a, b, d) \
	VSHUFF32X4 $0x44, b, a, Z28; \
	VSHUFF32X4 $0xEE, b, a, Z29; \
	VADDPS Z29, Z28, d

// func sumTile(acc *[2][tileG][16]float32, s *[2 * tileG]float32)
//
// s[i] = Σ of the 16 lanes of vector i of acc (i = 8k + t), by a
// transposing tree: each level adds two halves of pairs of vectors and
// packs the two results into one vector, 15 adds in all; the last level
// leaves the sums in the order [v0 v2 v1 v3 v8 v10 v9 v11 v4 v6 v5 v7 v12
// v14 v13 v15], which one VPERMPS by sumIdx undoes.
TEXT ·sumTile(SB), NOSPLIT, $0-16
	MOVQ acc+0(FP), DX
	MOVQ s+8(FP), DI
	LDACC16
	// Level 1: u_i = [v_i half sums | v_i+8 half sums], i < 8.
	HALF256(Z0, Z8, Z0)
	HALF256(Z1, Z9, Z1)
	HALF256(Z2, Z10, Z2)
	HALF256(Z3, Z11, Z3)
	HALF256(Z4, Z12, Z4)
	HALF256(Z5, Z13, Z5)
	HALF256(Z6, Z14, Z6)
	HALF256(Z7, Z15, Z7)
	// Level 2: w_i = quarters [v_i, v_i+8, v_i+4, v_i+12] summed to 4
	// lanes each, i < 4 ($0x88: q0 q2 of each, $0xDD: q1 q3).
	VSHUFF32X4 $0x88, Z4, Z0, Z16; VSHUFF32X4 $0xDD, Z4, Z0, Z17; VADDPS Z17, Z16, Z0
	VSHUFF32X4 $0x88, Z5, Z1, Z16; VSHUFF32X4 $0xDD, Z5, Z1, Z17; VADDPS Z17, Z16, Z1
	VSHUFF32X4 $0x88, Z6, Z2, Z16; VSHUFF32X4 $0xDD, Z6, Z2, Z17; VADDPS Z17, Z16, Z2
	VSHUFF32X4 $0x88, Z7, Z3, Z16; VSHUFF32X4 $0xDD, Z7, Z3, Z17; VADDPS Z17, Z16, Z3
	// Level 3: in each quarter, pairs of lanes of w_i and w_i+2, i < 2.
	VSHUFPS $0x44, Z2, Z0, Z16; VSHUFPS $0xEE, Z2, Z0, Z17; VADDPS Z17, Z16, Z0
	VSHUFPS $0x44, Z3, Z1, Z16; VSHUFPS $0xEE, Z3, Z1, Z17; VADDPS Z17, Z16, Z1
	// Level 4: single lanes: quarter l = [w0, w2, w1, w3] of quarter l.
	VSHUFPS $0x88, Z1, Z0, Z16; VSHUFPS $0xDD, Z1, Z0, Z17; VADDPS Z17, Z16, Z0
	VMOVUPS sumIdx<>(SB), Z1
	VPERMPS Z0, Z1, Z0
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET
