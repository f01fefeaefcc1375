//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// The int8-activation kernel for several rows of x (a verify block of
// speculative decoding, or decode steps of several sequences): each step
// of 64 bytes of an index row is looked up (two VPERMB, as in lut4I8) and
// multiplied by the same step of every row of x (VPDPBUSD), so the
// weights are read from memory once for up to eight rows. x and its
// scales come interleaved by step (int8rows.go): step s of row t at
// xq + (s·T + t)·128, the scales of block b of row t at
// ds + (b·T + t)·64.
//
// Index rows go four at a time (a quad, rows q0…q3 one after another in
// w) and x rows four at a time (a half: rows 0…3, then 4…7): each 64
// bytes of x loaded meet the four index rows' looked-up steps. A block
// (four steps) runs for the first half, then again for the second half
// on the same lines of codes, now in L1, looked up again. One index row
// at a time (sixteen loads of x a step at T = 8, for one load of codes)
// ran from DRAM at half its speed from L3 on a Zen 5 EPYC, and the same
// kernel with half of those loads (a timing experiment) 1.7× faster from
// DRAM: the loads of x, not the arithmetic, kept it from running ahead
// of the code stream. Quads made T = 8 products from DRAM 1.3–2.2×
// faster (2048×6912 most: eight rows of its x, 55 KB, do not fit L1) and
// a verify block of eight rows of the synth-1.4b 1.4× faster; in cache
// T = 8 is unchanged and T = 2…4 run 1.2–2.1× faster (BENCHMARKS.md,
// issue 14).
//
// Quad row i's int32 lanes of x row 4h + j go to Z(4j + i); the float32
// lanes of every (index row, x row) are kept in the frame at t·512 + r·64
// (x row t, index row r of the group), where they are staged for the
// group's sums. Integer sums are exact, and the float32 steps are
// lut4I8's in the same order (FOLD per block, TREE8 per group of eight
// index rows), so every row gets lut4I8's bits.

#define int8Ahead 4096

// QLOAD loads step SI of the quad's four index rows (q0 at SI, q1 at
// SI + R11, q2 at R12 = SI + 2·R11, q3 at R12 + R11) and looks them up:
// row i's low nibbles into Z(16 + 2i), its high nibbles into Z(17 + 2i).
#define QLOAD \
	VMOVDQU64 (SI), Z16; \
	VMOVDQU64 (SI)(R11*1), Z18; \
	LEAQ (SI)(R11*2), R12; \
	VMOVDQU64 (R12), Z20; \
	VMOVDQU64 (R12)(R11*1), Z22; \
	VPSRLW $4, Z16, Z17; \
	VPSRLW $4, Z18, Z19; \
	VPSRLW $4, Z20, Z21; \
	VPSRLW $4, Z22, Z23; \
	VPERMB Z26, Z16, Z16; \
	VPERMB Z26, Z17, Z17; \
	VPERMB Z26, Z18, Z18; \
	VPERMB Z26, Z19, Z19; \
	VPERMB Z26, Z20, Z20; \
	VPERMB Z26, Z21, Z21; \
	VPERMB Z26, Z22, Z22; \
	VPERMB Z26, Z23, Z23

// QFETCH prefetches the quad's four rows int8Ahead bytes on (after QLOAD).
#define QFETCH \
	PREFETCHT1 int8Ahead(SI); \
	PREFETCHT1 int8Ahead(SI)(R11*1); \
	PREFETCHT1 int8Ahead(R12); \
	PREFETCHT1 int8Ahead(R12)(R11*1)

// func lut4I8T(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of eight index rows from w (each 64·steps
// bytes, one table) and rows (1…8) rows of x, h[t·hstride + k] = Σ d·S
// of index row k and x row t (int8RowGo's value, bit for bit).
//
// Registers: AX steps left in the row, BX rows of x, CX steps left in the
// half-block, DX and DI the codes and x at the block's start, R8 scale
// bytes a block, R9 the quad's frame offset, R10 steps in the block, R11
// bytes of an index row (the output stride while summing), R13 the
// block's scales, R14 and SI x and codes, R15 x bytes a step; the group
// count stays in the argument.
TEXT ·lut4I8T(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VPXORD Z31, Z31, Z31
	MOVQ w+8(FP), SI
	MOVQ rows+40(FP), BX
	MOVQ BX, R15
	SHLQ $7, R15 // x bytes per step: T·128
	MOVQ BX, R8
	SHLQ $6, R8 // scale bytes per block: T·64
	CMPQ groups+48(FP), $0
	JLE tdone
	CMPQ steps+16(FP), $0
	JLE tdone
	CMPQ BX, $1
	JLT tdone
	CMPQ BX, $8
	JGT tdone

tgroup:
	MOVQ steps+16(FP), R11
	SHLQ $6, R11 // bytes of an index row
	XORQ R9, R9

tquad:
	ZERO4(0)
	ZERO4(1)
	ZERO4(2)
	ZERO4(3)
	ZERO4(4)
	ZERO4(5)
	ZERO4(6)
	ZERO4(7)
	MOVQ steps+16(FP), AX
	MOVQ xq+24(FP), R14
	MOVQ ds+32(FP), R13

tblock:
	MOVQ $4, R10
	CMPQ AX, $4
	CMOVQLT AX, R10 // steps in this block: min(4, left)
	MOVQ SI, DX
	MOVQ R14, DI
	ZACC
	MOVQ R10, CX

th0:
	QLOAD
	QFETCH
	DOT4(0, Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ th0next
	DOT4(128, Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ th0next
	DOT4(256, Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ th0next
	DOT4(384, Z12, Z13, Z14, Z15)

th0next:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ CX
	JNZ th0
	FOLD4(0, Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ tblockdone
	FOLD4(1, Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ tblockdone
	FOLD4(2, Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ tblockdone
	FOLD4(3, Z12, Z13, Z14, Z15)
	CMPQ BX, $4
	JEQ tblockdone
	// The second half: x rows 4… on the same steps of codes.
	ZACC
	MOVQ DX, SI
	MOVQ DI, R14
	MOVQ R10, CX

th1:
	QLOAD
	DOT4(512, Z0, Z1, Z2, Z3)
	CMPQ BX, $5
	JEQ th1next
	DOT4(640, Z4, Z5, Z6, Z7)
	CMPQ BX, $6
	JEQ th1next
	DOT4(768, Z8, Z9, Z10, Z11)
	CMPQ BX, $7
	JEQ th1next
	DOT4(896, Z12, Z13, Z14, Z15)

th1next:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ CX
	JNZ th1
	FOLD4(4, Z0, Z1, Z2, Z3)
	CMPQ BX, $5
	JEQ tblockdone
	FOLD4(5, Z4, Z5, Z6, Z7)
	CMPQ BX, $6
	JEQ tblockdone
	FOLD4(6, Z8, Z9, Z10, Z11)
	CMPQ BX, $7
	JEQ tblockdone
	FOLD4(7, Z12, Z13, Z14, Z15)

tblockdone:
	ADDQ R8, R13
	SUBQ R10, AX
	JNZ tblock
	// SI is at the end of q0, the start of q1: on past q3.
	LEAQ (SI)(R11*2), SI
	ADDQ R11, SI
	ADDQ $256, R9
	CMPQ R9, $512
	JLT tquad

	MOVQ hstride+64(FP), R11
	SHLQ $2, R11
	MOVQ h+56(FP), R13
	GROUPT(0)
	CMPQ BX, $1
	JEQ tsummed
	GROUPT(1)
	CMPQ BX, $2
	JEQ tsummed
	GROUPT(2)
	CMPQ BX, $3
	JEQ tsummed
	GROUPT(3)
	CMPQ BX, $4
	JEQ tsummed
	GROUPT(4)
	CMPQ BX, $5
	JEQ tsummed
	GROUPT(5)
	CMPQ BX, $6
	JEQ tsummed
	GROUPT(6)
	CMPQ BX, $7
	JEQ tsummed
	GROUPT(7)

tsummed:
	ADDQ $32, h+56(FP)
	DECQ groups+48(FP)
	JNZ tgroup

tdone:
	VZEROUPPER
	RET
