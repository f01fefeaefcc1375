//go:build goexperiment.simd

#include "textflag.h"

// func quantBlock(x *float32, q *int8, steps int, ms *[8][16]float32, ss *[8][16]int32, perm *[4][16]uint32)
//
// quantizeFast's vector work on one block of the activation quantizer
// (steps ≤ 4 steps of 128 columns from x): for each vector v of 16
// columns (16v … 16v+15 of every step), the maxima of |x| over each half
// of eight lanes (every step), broadcast over the half, into ms[v]; the
// codes c = int32(roundeven(x·(127/max(m, int8Tiny)))), their even
// columns' int8s at q + 128s + 8v and odd ones' 64 bytes on; the codes'
// sums over each half into ss[v]. The same operations on the same lanes
// as quantizeRowGo's, so its bits. perm holds the lane orders evenOdd,
// swap4, swap2, swap1 (quantPerm).
//
// Registers: Z28–Z31 the permutations, Z27 the |·| mask, Z26 127, Z25
// int8Tiny; Z0 the maximum, Z1 the inverse scale, Z2 the sums, Z3/Z4
// scratch. SI x of vector v, DI q of vector v, R8 ms[v], R9 ss[v], CX
// vectors left, DX steps left, R10/R11 the step's x and q.
TEXT ·quantBlock(SB), NOSPLIT, $0-48
	MOVQ perm+40(FP), AX
	VMOVDQU32 (AX), Z28
	VMOVDQU32 64(AX), Z29
	VMOVDQU32 128(AX), Z30
	VMOVDQU32 192(AX), Z31
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z27
	MOVL $0x42fe0000, AX // 127
	VPBROADCASTD AX, Z26
	MOVL $0x0d800000, AX // int8Tiny = 2⁻¹⁰⁰
	VPBROADCASTD AX, Z25
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ ms+24(FP), R8
	MOVQ ss+32(FP), R9
	MOVQ $8, CX
	CMPQ steps+16(FP), $0
	JLE done
vec:
	// m = max over the steps of |x|, then over each half of eight lanes.
	VPXORD Z0, Z0, Z0
	MOVQ SI, R10
	MOVQ steps+16(FP), DX
amax:
	VPANDD (R10), Z27, Z3
	VMAXPS Z3, Z0, Z0
	ADDQ $512, R10
	DECQ DX
	JNZ amax
	VPERMPS Z0, Z29, Z3
	VMAXPS Z3, Z0, Z0
	VPERMPS Z0, Z30, Z3
	VMAXPS Z3, Z0, Z0
	VPERMPS Z0, Z31, Z3
	VMAXPS Z3, Z0, Z0
	VMOVUPS Z0, (R8)
	VMAXPS Z25, Z0, Z1
	VDIVPS Z1, Z26, Z1
	// codes, their sums and their int8s in even/odd order.
	VPXORD Z2, Z2, Z2
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ steps+16(FP), DX
codes:
	VMULPS (R10), Z1, Z3
	VRNDSCALEPS $0, Z3, Z3
	VCVTTPS2DQ Z3, Z3
	VPADDD Z3, Z2, Z2
	VPERMD Z3, Z28, Z3
	VPMOVSDB Z3, X3
	VMOVQ X3, (R11)
	VPEXTRQ $1, X3, 64(R11)
	ADDQ $512, R10
	ADDQ $128, R11
	DECQ DX
	JNZ codes
	VPERMD Z2, Z29, Z4
	VPADDD Z4, Z2, Z2
	VPERMD Z2, Z30, Z4
	VPADDD Z4, Z2, Z2
	VPERMD Z2, Z31, Z4
	VPADDD Z4, Z2, Z2
	VMOVDQU32 Z2, (R9)
	ADDQ $64, SI
	ADDQ $8, DI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ CX
	JNZ vec
done:
	VZEROUPPER
	RET
