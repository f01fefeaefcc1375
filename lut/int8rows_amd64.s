//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"

// The int8-activation kernel for several rows of x (a verify block of
// speculative decoding, or decode steps of several sequences): each step
// of 64 bytes of an index row is looked up once (two VPERMB, as in
// lut4I8) and multiplied by the same step of every row of x (VPDPBUSD),
// so the weights are read once for up to eight rows. x and its scales
// come interleaved by step (int8rows.go): step s of row t at
// xq + (s·T + t)·128, the scales of block b of row t at
// ds + (b·T + t)·64. Index rows go two at a time (A and B, one after the
// other in w), so that each 64 bytes of x are loaded once for both: one
// index row at a time made sixteen loads of x a step for one of codes,
// and where x outgrows L1 (eight rows of the MLP's down projection,
// 6,912 columns: 55 KB) those loads come from L2. On a Zen 5 EPYC the
// pairs made T = 8 products of 2048×6912 from DRAM 1.6–1.9× faster and a
// verify block of eight rows of the synth-1.4b 15% faster; on smaller
// inputs, and in cache, they change nothing (BENCHMARKS.md, issue 14).
// Row A's int32 lanes of x row t go to Z8+t, row B's to Z0+t; their
// float32 lanes are kept in the frame, where they are staged for the
// group's sums. Integer sums are exact, and the float32 steps are
// lut4I8's in the same order (FOLD per block, TREE8 per group of eight
// index rows), so every row gets lut4I8's bits.

#define int8Ahead 4096

// FOLD2 adds row A's (a) and row B's (b) int32 lanes of x row t, times the
// block's scales of that row, to their float32 lanes staged in the frame
// at t·512 + R9 (A) and t·512 + R9 + 64 (B): f + float32(acc)·d, rounded
// after the product and the sum, as lut4I8's FOLD.
#define FOLD2(t, a, b) \
	VMOVUPS (t*64)(R13), Z27; \
	VCVTDQ2PS a, a; \
	VMULPS Z27, a, a; \
	VADDPS (t*512)(SP)(R9*1), a, a; \
	VMOVUPS a, (t*512)(SP)(R9*1); \
	VCVTDQ2PS b, b; \
	VMULPS Z27, b, b; \
	VADDPS (t*512+64)(SP)(R9*1), b, b; \
	VMOVUPS b, (t*512+64)(SP)(R9*1)

// DOT2 adds the looked-up steps of rows A (Z18 low nibbles, Z19 high) and
// B (Z20, Z21) times the step of x row t at R14 + off to a and b.
#define DOT2(off, a, b) \
	VMOVDQU64 off(R14), Z22; \
	VMOVDQU64 off+64(R14), Z23; \
	VPDPBUSD Z22, Z18, a; \
	VPDPBUSD Z23, Z19, a; \
	VPDPBUSD Z22, Z20, b; \
	VPDPBUSD Z23, Z21, b

// ZERO2 clears the staged float32 lanes of rows A and B of x row t (Z31
// holds zeros).
#define ZERO2(t) \
	VMOVUPS Z31, (t*512)(SP)(R9*1); \
	VMOVUPS Z31, (t*512+64)(SP)(R9*1)

// GROUPT sums x row t's staged lanes of the group's eight index rows
// (frame t·512 …) by TREE8 and stores them at R13, then moves R13 on by
// the output row stride R11.
#define GROUPT(t) \
	VMOVUPS (t*512)(SP), Z0; \
	VMOVUPS (t*512+64)(SP), Z1; \
	VMOVUPS (t*512+128)(SP), Z2; \
	VMOVUPS (t*512+192)(SP), Z3; \
	VMOVUPS (t*512+256)(SP), Z4; \
	VMOVUPS (t*512+320)(SP), Z5; \
	VMOVUPS (t*512+384)(SP), Z6; \
	VMOVUPS (t*512+448)(SP), Z7; \
	TREE8; \
	VMOVUPS Y0, (R13); \
	ADDQ R11, R13

// func lut4I8T(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of eight index rows from w (each 64·steps
// bytes, one table) and rows (1…8) rows of x, h[t·hstride + k] = Σ d·S
// of index row k and x row t (int8RowGo's value, bit for bit).
TEXT ·lut4I8T(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ w+8(FP), SI
	MOVQ steps+16(FP), CX
	MOVQ xq+24(FP), DI
	MOVQ ds+32(FP), R10
	MOVQ rows+40(FP), BX
	MOVQ groups+48(FP), R12
	MOVQ BX, R15
	SHLQ $7, R15 // x bytes per step: T·128
	MOVQ BX, R8
	SHLQ $6, R8 // scale bytes per block: T·64
	VPXORD Z31, Z31, Z31 // zeros for ZERO2 (TREE8 uses Z16, Z17, Z28, Z29)
	TESTQ R12, R12
	JLE tdone
	TESTQ CX, CX
	JLE tdone
	CMPQ BX, $1
	JLT tdone
	CMPQ BX, $8
	JGT tdone

tgroup:
	MOVQ CX, R11
	SHLQ $6, R11 // bytes of an index row: row B is at SI + R11
	XORQ R9, R9

tpair:
	ZERO2(0)
	ZERO2(1)
	ZERO2(2)
	ZERO2(3)
	ZERO2(4)
	ZERO2(5)
	ZERO2(6)
	ZERO2(7)
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ CX, AX

tblock:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

tstep:
	VMOVDQU64 (SI), Z18
	VMOVDQU64 (SI)(R11*1), Z20
	PREFETCHT1 int8Ahead(SI)
	PREFETCHT1 int8Ahead(SI)(R11*1)
	VPSRLW $4, Z18, Z19
	VPSRLW $4, Z20, Z21
	VPERMB Z26, Z18, Z18
	VPERMB Z26, Z19, Z19
	VPERMB Z26, Z20, Z20
	VPERMB Z26, Z21, Z21
	DOT2(0, Z8, Z0)
	CMPQ BX, $1
	JEQ tstepped
	DOT2(128, Z9, Z1)
	CMPQ BX, $2
	JEQ tstepped
	DOT2(256, Z10, Z2)
	CMPQ BX, $3
	JEQ tstepped
	DOT2(384, Z11, Z3)
	CMPQ BX, $4
	JEQ tstepped
	DOT2(512, Z12, Z4)
	CMPQ BX, $5
	JEQ tstepped
	DOT2(640, Z13, Z5)
	CMPQ BX, $6
	JEQ tstepped
	DOT2(768, Z14, Z6)
	CMPQ BX, $7
	JEQ tstepped
	DOT2(896, Z15, Z7)

tstepped:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ AX
	JZ tfold
	MOVQ CX, DX
	SUBQ AX, DX
	TESTQ $3, DX // a block is four steps
	JNZ tstep

tfold:
	FOLD2(0, Z8, Z0)
	CMPQ BX, $1
	JEQ tfolded
	FOLD2(1, Z9, Z1)
	CMPQ BX, $2
	JEQ tfolded
	FOLD2(2, Z10, Z2)
	CMPQ BX, $3
	JEQ tfolded
	FOLD2(3, Z11, Z3)
	CMPQ BX, $4
	JEQ tfolded
	FOLD2(4, Z12, Z4)
	CMPQ BX, $5
	JEQ tfolded
	FOLD2(5, Z13, Z5)
	CMPQ BX, $6
	JEQ tfolded
	FOLD2(6, Z14, Z6)
	CMPQ BX, $7
	JEQ tfolded
	FOLD2(7, Z15, Z7)

tfolded:
	ADDQ R8, R13
	TESTQ AX, AX
	JNZ tblock
	ADDQ R11, SI // past row B: the next pair's row A
	ADDQ $128, R9
	CMPQ R9, $512
	JLT tpair

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
	DECQ R12
	JNZ tgroup

tdone:
	VZEROUPPER
	RET
