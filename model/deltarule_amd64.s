//go:build goexperiment.simd

#include "textflag.h"

// The decode-time delta rule on 128 value columns of one head
// (deltaStepFast's pass of 128): a row of the state is 512 contiguous bytes,
// so a state that comes from DRAM streams as the prefetchers like it, and
// the eight vectors a row are held in registers, where the compiler's code
// kept them on the stack. Every column's operations are deltaStepGo's, in
// its order, each rounded as there (VMULPS then VADDPS, never fused).

// MULROW sets Z8…Z15 to the row at base times a.
#define MULROW(base, a) \
	VMULPS 0(base), a, Z8; \
	VMULPS 64(base), a, Z9; \
	VMULPS 128(base), a, Z10; \
	VMULPS 192(base), a, Z11; \
	VMULPS 256(base), a, Z12; \
	VMULPS 320(base), a, Z13; \
	VMULPS 384(base), a, Z14; \
	VMULPS 448(base), a, Z15

// STROW stores eight vectors as the row at base.
#define STROW(base, r0, r1, r2, r3, r4, r5, r6, r7) \
	VMOVUPS r0, 0(base); \
	VMOVUPS r1, 64(base); \
	VMOVUPS r2, 128(base); \
	VMOVUPS r3, 192(base); \
	VMOVUPS r4, 256(base); \
	VMOVUPS r5, 320(base); \
	VMOVUPS r6, 384(base); \
	VMOVUPS r7, 448(base)

// ACC adds s times x to the accumulator acc (s·x rounded, then the sum),
// through the temporary t.
#define ACC(s, x, acc, t) \
	VMULPS x, s, t; \
	VADDPS t, acc, acc

// func deltaRule128(S, src, k, q, v, o unsafe.Pointer, dk, stride int, alpha, beta float32)
//
// For the 128 columns at S and src (rows stride bytes apart, dk of them):
// S ← α·src; w = Sᵀk; u = β(v − w); S ← S + k uᵀ; o = Sᵀq.
TEXT ·deltaRule128(SB), NOSPLIT, $0-72
	MOVQ S+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ k+16(FP), BX
	MOVQ dk+48(FP), CX
	MOVQ stride+56(FP), R8
	VBROADCASTSS alpha+64(FP), Z31
	VBROADCASTSS beta+68(FP), Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	TESTQ CX, CX
	JLE decay0
decay:
	MULROW(SI, Z31)
	STROW(DI, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VBROADCASTSS (BX), Z29
	ACC(Z29, Z8, Z0, Z16)
	ACC(Z29, Z9, Z1, Z17)
	ACC(Z29, Z10, Z2, Z18)
	ACC(Z29, Z11, Z3, Z19)
	ACC(Z29, Z12, Z4, Z20)
	ACC(Z29, Z13, Z5, Z21)
	ACC(Z29, Z14, Z6, Z22)
	ACC(Z29, Z15, Z7, Z23)
	ADDQ R8, SI
	ADDQ R8, DI
	ADDQ $4, BX
	DECQ CX
	JNZ decay
decay0:
	// u = β(v − w) into Z0…Z7
	MOVQ v+32(FP), AX
	VMOVUPS 0(AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	VMOVUPS 256(AX), Z12
	VMOVUPS 320(AX), Z13
	VMOVUPS 384(AX), Z14
	VMOVUPS 448(AX), Z15
	VSUBPS Z0, Z8, Z0
	VSUBPS Z1, Z9, Z1
	VSUBPS Z2, Z10, Z2
	VSUBPS Z3, Z11, Z3
	VSUBPS Z4, Z12, Z4
	VSUBPS Z5, Z13, Z5
	VSUBPS Z6, Z14, Z6
	VSUBPS Z7, Z15, Z7
	VMULPS Z30, Z0, Z0
	VMULPS Z30, Z1, Z1
	VMULPS Z30, Z2, Z2
	VMULPS Z30, Z3, Z3
	VMULPS Z30, Z4, Z4
	VMULPS Z30, Z5, Z5
	VMULPS Z30, Z6, Z6
	VMULPS Z30, Z7, Z7
	// the update and o = Sᵀq (o in Z8…Z15)
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ S+0(FP), DI
	MOVQ k+16(FP), BX
	MOVQ q+24(FP), DX
	MOVQ dk+48(FP), CX
	TESTQ CX, CX
	JLE done
update:
	VBROADCASTSS (BX), Z29
	VBROADCASTSS (DX), Z28
	VMULPS Z0, Z29, Z16
	VMULPS Z1, Z29, Z17
	VMULPS Z2, Z29, Z18
	VMULPS Z3, Z29, Z19
	VMULPS Z4, Z29, Z20
	VMULPS Z5, Z29, Z21
	VMULPS Z6, Z29, Z22
	VMULPS Z7, Z29, Z23
	VADDPS 0(DI), Z16, Z16
	VADDPS 64(DI), Z17, Z17
	VADDPS 128(DI), Z18, Z18
	VADDPS 192(DI), Z19, Z19
	VADDPS 256(DI), Z20, Z20
	VADDPS 320(DI), Z21, Z21
	VADDPS 384(DI), Z22, Z22
	VADDPS 448(DI), Z23, Z23
	STROW(DI, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	ACC(Z28, Z16, Z8, Z24)
	ACC(Z28, Z17, Z9, Z25)
	ACC(Z28, Z18, Z10, Z26)
	ACC(Z28, Z19, Z11, Z27)
	ACC(Z28, Z20, Z12, Z24)
	ACC(Z28, Z21, Z13, Z25)
	ACC(Z28, Z22, Z14, Z26)
	ACC(Z28, Z23, Z15, Z27)
	ADDQ R8, DI
	ADDQ $4, BX
	ADDQ $4, DX
	DECQ CX
	JNZ update
done:
	MOVQ o+40(FP), AX
	STROW(AX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET
