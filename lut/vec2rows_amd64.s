//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// vec2I8T is lut4I8T (int8rows_amd64.s) for 2-vector matrices: index
// rows go two at a time (a pair, A then B in w), each looked up in both
// components' tables, and x rows four at a time, so that each 64-byte
// load of x meets four looked-up steps (two rows, two components), as in
// lut4I8T's quads. The four outputs of a pair (A's components 0 and 1,
// then B's) take the places of a quad's four index rows: quad row i's
// registers, frame slots (x row t: t·512 + R9 + i·64, two pairs a group
// of eight outputs, vec2I8's order) and group sums are lut4I8T's, so every
// row gets vec2I8's bits. It runs for three or more rows of x: verify
// blocks of eight rows of the 2x16 synth-1.4b bundle took 44.1–52.4 ms
// with it against 50.6–64.6 row by row, four rows 27.5–31.0 against
// 29.6–33.3, but two rows 18.5–21.9 against 16.9–19.3 (a Zen 5 EPYC,
// BENCHMARKS.md, issue 14).

#define vecAhead 4096

// VLOAD loads step SI of the pair (A at SI, B at SI + R11) and looks it up:
// A's component 0 low and high nibbles into Z16, Z17, component 1 into
// Z18, Z19; B's into Z20–Z23.
#define VLOAD \
	VMOVDQU64 (SI), Z18; \
	VMOVDQU64 (SI)(R11*1), Z22; \
	VPSRLW $4, Z18, Z19; \
	VPSRLW $4, Z22, Z23; \
	VPERMB Z26, Z18, Z16; \
	VPERMB Z26, Z19, Z17; \
	VPERMB Z30, Z18, Z18; \
	VPERMB Z30, Z19, Z19; \
	VPERMB Z26, Z22, Z20; \
	VPERMB Z26, Z23, Z21; \
	VPERMB Z30, Z22, Z22; \
	VPERMB Z30, Z23, Z23

// VFETCH prefetches the pair vecAhead bytes on.
#define VFETCH \
	PREFETCHT1 vecAhead(SI); \
	PREFETCHT1 vecAhead(SI)(R11*1)

// func vec2I8T(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of four 2-vector index rows from w (each
// 64·steps bytes; tables tab[0:64] and tab[64:128]) and rows (1…8) rows
// of x, h[t·hstride + 2k + c] = Σ d·S of index row k, component c, and x
// row t (int8RowGo's value with component c's table, bit for bit).
// Registers as in lut4I8T.
TEXT ·vec2I8T(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	VPXORD Z31, Z31, Z31
	MOVQ w+8(FP), SI
	MOVQ rows+40(FP), BX
	MOVQ BX, R15
	SHLQ $7, R15 // x bytes per step: T·128
	MOVQ BX, R8
	SHLQ $6, R8 // scale bytes per block: T·64
	CMPQ groups+48(FP), $0
	JLE vdone
	CMPQ steps+16(FP), $0
	JLE vdone
	CMPQ BX, $1
	JLT vdone
	CMPQ BX, $8
	JGT vdone

vgroup:
	MOVQ steps+16(FP), R11
	SHLQ $6, R11 // bytes of an index row
	XORQ R9, R9

vpair:
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

vblock:
	MOVQ $4, R10
	CMPQ AX, $4
	CMOVQLT AX, R10 // steps in this block: min(4, left)
	MOVQ SI, DX
	MOVQ R14, DI
	ZACC
	MOVQ R10, CX

vh0:
	VLOAD
	VFETCH
	DOT4(0, Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ vh0next
	DOT4(128, Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ vh0next
	DOT4(256, Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ vh0next
	DOT4(384, Z12, Z13, Z14, Z15)

vh0next:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ CX
	JNZ vh0
	FOLD4(0, Z0, Z1, Z2, Z3)
	CMPQ BX, $1
	JEQ vblockdone
	FOLD4(1, Z4, Z5, Z6, Z7)
	CMPQ BX, $2
	JEQ vblockdone
	FOLD4(2, Z8, Z9, Z10, Z11)
	CMPQ BX, $3
	JEQ vblockdone
	FOLD4(3, Z12, Z13, Z14, Z15)
	CMPQ BX, $4
	JEQ vblockdone
	// The second half: x rows 4… on the same steps of codes.
	ZACC
	MOVQ DX, SI
	MOVQ DI, R14
	MOVQ R10, CX

vh1:
	VLOAD
	DOT4(512, Z0, Z1, Z2, Z3)
	CMPQ BX, $5
	JEQ vh1next
	DOT4(640, Z4, Z5, Z6, Z7)
	CMPQ BX, $6
	JEQ vh1next
	DOT4(768, Z8, Z9, Z10, Z11)
	CMPQ BX, $7
	JEQ vh1next
	DOT4(896, Z12, Z13, Z14, Z15)

vh1next:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ CX
	JNZ vh1
	FOLD4(4, Z0, Z1, Z2, Z3)
	CMPQ BX, $5
	JEQ vblockdone
	FOLD4(5, Z4, Z5, Z6, Z7)
	CMPQ BX, $6
	JEQ vblockdone
	FOLD4(6, Z8, Z9, Z10, Z11)
	CMPQ BX, $7
	JEQ vblockdone
	FOLD4(7, Z12, Z13, Z14, Z15)

vblockdone:
	ADDQ R8, R13
	SUBQ R10, AX
	JNZ vblock
	// SI is at the end of row A, the start of row B: on past B.
	ADDQ R11, SI
	ADDQ $256, R9
	CMPQ R9, $512
	JLT vpair

	MOVQ hstride+64(FP), R11
	SHLQ $2, R11
	MOVQ h+56(FP), R13
	GROUPT(0)
	CMPQ BX, $1
	JEQ vsummed
	GROUPT(1)
	CMPQ BX, $2
	JEQ vsummed
	GROUPT(2)
	CMPQ BX, $3
	JEQ vsummed
	GROUPT(3)
	CMPQ BX, $4
	JEQ vsummed
	GROUPT(4)
	CMPQ BX, $5
	JEQ vsummed
	GROUPT(5)
	CMPQ BX, $6
	JEQ vsummed
	GROUPT(6)
	CMPQ BX, $7
	JEQ vsummed
	GROUPT(7)

vsummed:
	ADDQ $32, h+56(FP)
	DECQ groups+48(FP)
	JNZ vgroup

vdone:
	VZEROUPPER
	RET
