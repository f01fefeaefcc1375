//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// lut4I8T1 is int8rows_amd64.s's lut4I8T one index row at a time: each
// step of a row's codes is looked up once and multiplied by the same step
// of every row of x, sixteen loads of x a step at T = 8 against one of
// codes. Each core reads one sequential stream of codes, which for one or
// two rows of x, where the kernel waits on memory rather than on its
// loads of x, beats four streams: decode steps of two sequences batched
// ran ~10% faster with it than with the quads, verify blocks of two rows
// ~8% (synth-1.4b LUT4 bundle on a Zen 5 EPYC, BENCHMARKS.md, issue 14).
// Layouts, registers of x and scales, and bits are lut4I8T's; row t's
// int32 lanes go to Z8+t, its float32 lanes to Z0+t.

#define seqAhead 4096

#define SFOLD(acc, f) \
	VCVTDQ2PS acc, acc; \
	VMULPS Z27, acc, acc; \
	VADDPS acc, f, f

// DOT adds the looked-up step (Z18 low nibbles, Z19 high) times row t of
// x at R14 to acc.
#define SDOT(off, acc) \
	VPDPBUSD off(R14), Z18, acc; \
	VPDPBUSD off+64(R14), Z19, acc

// func lut4I8T1(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of eight index rows from w (each 64·steps
// bytes, one table) and rows (1…8) rows of x, h[t·hstride + k] = Σ d·S
// of index row k and x row t (int8RowGo's value, bit for bit).
TEXT ·lut4I8T1(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ w+8(FP), SI
	MOVQ steps+16(FP), CX
	MOVQ xq+24(FP), DI
	MOVQ ds+32(FP), R10
	MOVQ rows+40(FP), BX
	MOVQ groups+48(FP), R12
	MOVQ hstride+64(FP), R11
	SHLQ $2, R11
	MOVQ BX, R15
	SHLQ $7, R15 // x bytes per step: T·128
	MOVQ BX, R8
	SHLQ $6, R8 // scale bytes per block: T·64
	TESTQ R12, R12
	JLE s1done
	TESTQ CX, CX
	JLE s1done
	CMPQ BX, $1
	JLT s1done
	CMPQ BX, $8
	JGT s1done

s1group:
	XORQ R9, R9

s1row:
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ CX, AX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

s1block:
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

s1step:
	VMOVDQU64 (SI), Z18
	PREFETCHT1 seqAhead(SI)
	VPSRLW $4, Z18, Z19
	VPERMB Z26, Z18, Z18
	VPERMB Z26, Z19, Z19
	CMPQ BX, $8
	JNE s1part
	// Eight rows (a verify block of seven drafts): no tests between them.
	SDOT(0, Z8)
	SDOT(128, Z9)
	SDOT(256, Z10)
	SDOT(384, Z11)
	SDOT(512, Z12)
	SDOT(640, Z13)
	SDOT(768, Z14)
	SDOT(896, Z15)
	JMP s1stepped

s1part:
	SDOT(0, Z8)
	CMPQ BX, $1
	JEQ s1stepped
	SDOT(128, Z9)
	CMPQ BX, $2
	JEQ s1stepped
	SDOT(256, Z10)
	CMPQ BX, $3
	JEQ s1stepped
	SDOT(384, Z11)
	CMPQ BX, $4
	JEQ s1stepped
	SDOT(512, Z12)
	CMPQ BX, $5
	JEQ s1stepped
	SDOT(640, Z13)
	CMPQ BX, $6
	JEQ s1stepped
	SDOT(768, Z14)
	CMPQ BX, $7
	JEQ s1stepped
	SDOT(896, Z15)

s1stepped:
	ADDQ $64, SI
	ADDQ R15, R14
	DECQ AX
	JZ s1fold
	MOVQ CX, DX
	SUBQ AX, DX
	TESTQ $3, DX // a block is four steps
	JNZ s1step

s1fold:
	VMOVUPS (R13), Z27
	SFOLD(Z8, Z0)
	CMPQ BX, $1
	JEQ s1folded
	VMOVUPS 64(R13), Z27
	SFOLD(Z9, Z1)
	CMPQ BX, $2
	JEQ s1folded
	VMOVUPS 128(R13), Z27
	SFOLD(Z10, Z2)
	CMPQ BX, $3
	JEQ s1folded
	VMOVUPS 192(R13), Z27
	SFOLD(Z11, Z3)
	CMPQ BX, $4
	JEQ s1folded
	VMOVUPS 256(R13), Z27
	SFOLD(Z12, Z4)
	CMPQ BX, $5
	JEQ s1folded
	VMOVUPS 320(R13), Z27
	SFOLD(Z13, Z5)
	CMPQ BX, $6
	JEQ s1folded
	VMOVUPS 384(R13), Z27
	SFOLD(Z14, Z6)
	CMPQ BX, $7
	JEQ s1folded
	VMOVUPS 448(R13), Z27
	SFOLD(Z15, Z7)

s1folded:
	ADDQ R8, R13
	TESTQ AX, AX
	JNZ s1block
	// Stage this index row's lanes of every x row: frame t·512 + r·64.
	VMOVUPS Z0, 0(SP)(R9*1)
	VMOVUPS Z1, 512(SP)(R9*1)
	VMOVUPS Z2, 1024(SP)(R9*1)
	VMOVUPS Z3, 1536(SP)(R9*1)
	VMOVUPS Z4, 2048(SP)(R9*1)
	VMOVUPS Z5, 2560(SP)(R9*1)
	VMOVUPS Z6, 3072(SP)(R9*1)
	VMOVUPS Z7, 3584(SP)(R9*1)
	ADDQ $64, R9
	CMPQ R9, $512
	JLT s1row

	MOVQ h+56(FP), R13
	GROUPT(0)
	CMPQ BX, $1
	JEQ s1summed
	GROUPT(1)
	CMPQ BX, $2
	JEQ s1summed
	GROUPT(2)
	CMPQ BX, $3
	JEQ s1summed
	GROUPT(3)
	CMPQ BX, $4
	JEQ s1summed
	GROUPT(4)
	CMPQ BX, $5
	JEQ s1summed
	GROUPT(5)
	CMPQ BX, $6
	JEQ s1summed
	GROUPT(6)
	CMPQ BX, $7
	JEQ s1summed
	GROUPT(7)

s1summed:
	ADDQ $32, h+56(FP)
	DECQ R12
	JNZ s1group

s1done:
	VZEROUPPER
	RET
