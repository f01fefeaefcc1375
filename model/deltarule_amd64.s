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

// LDROW loads the row at base into eight vectors.
#define LDROW(base, r0, r1, r2, r3, r4, r5, r6, r7) \
	VMOVUPS 0(base), r0; \
	VMOVUPS 64(base), r1; \
	VMOVUPS 128(base), r2; \
	VMOVUPS 192(base), r3; \
	VMOVUPS 256(base), r4; \
	VMOVUPS 320(base), r5; \
	VMOVUPS 384(base), r6; \
	VMOVUPS 448(base), r7

// ZERO8 clears eight vectors.
#define ZERO8(r0, r1, r2, r3, r4, r5, r6, r7) \
	VPXORD r0, r0, r0; \
	VPXORD r1, r1, r1; \
	VPXORD r2, r2, r2; \
	VPXORD r3, r3, r3; \
	VPXORD r4, r4, r4; \
	VPXORD r5, r5, r5; \
	VPXORD r6, r6, r6; \
	VPXORD r7, r7, r7

// ACC adds s times x to the accumulator acc (s·x rounded, then the sum),
// through the temporary t.
#define ACC(s, x, acc, t) \
	VMULPS x, s, t; \
	VADDPS t, acc, acc

// ACC8 is ACC on eight vectors x and accumulators a (temporaries Z24–Z27).
#define ACC8(s, x0, x1, x2, x3, x4, x5, x6, x7, a0, a1, a2, a3, a4, a5, a6, a7) \
	ACC(s, x0, a0, Z24); \
	ACC(s, x1, a1, Z25); \
	ACC(s, x2, a2, Z26); \
	ACC(s, x3, a3, Z27); \
	ACC(s, x4, a4, Z24); \
	ACC(s, x5, a5, Z25); \
	ACC(s, x6, a6, Z26); \
	ACC(s, x7, a7, Z27)

// DECAYROW is one key row of the first pass: the row at SI times α (Z31)
// stored at DI, w (Z0…Z7) += k_i (at BX) times it; then on to the next.
#define DECAYROW \
	MULROW(SI, Z31); \
	STROW(DI, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	VBROADCASTSS (BX), Z29; \
	ACC8(Z29, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	ADDQ R8, SI; \
	ADDQ R8, DI; \
	ADDQ $4, BX

// UPDATEROW is one key row of the second pass: the row at DI += k_i (at
// BX) times u (Z0…Z7), o (Z8…Z15) += q_i (at DX) times it; then on.
#define UPDATEROW \
	VBROADCASTSS (BX), Z29; \
	VBROADCASTSS (DX), Z28; \
	VMULPS Z0, Z29, Z16; \
	VMULPS Z1, Z29, Z17; \
	VMULPS Z2, Z29, Z18; \
	VMULPS Z3, Z29, Z19; \
	VMULPS Z4, Z29, Z20; \
	VMULPS Z5, Z29, Z21; \
	VMULPS Z6, Z29, Z22; \
	VMULPS Z7, Z29, Z23; \
	VADDPS 0(DI), Z16, Z16; \
	VADDPS 64(DI), Z17, Z17; \
	VADDPS 128(DI), Z18, Z18; \
	VADDPS 192(DI), Z19, Z19; \
	VADDPS 256(DI), Z20, Z20; \
	VADDPS 320(DI), Z21, Z21; \
	VADDPS 384(DI), Z22, Z22; \
	VADDPS 448(DI), Z23, Z23; \
	STROW(DI, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23); \
	ACC8(Z28, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	ADDQ R8, DI; \
	ADDQ $4, BX; \
	ADDQ $4, DX

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
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	TESTQ CX, CX
	JLE decay0
decay:
	DECAYROW
	DECQ CX
	JNZ decay
decay0:
	// u = β(v − w) into Z0…Z7
	MOVQ v+32(FP), AX
	LDROW(AX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
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
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ S+0(FP), DI
	MOVQ k+16(FP), BX
	MOVQ q+24(FP), DX
	MOVQ dk+48(FP), CX
	TESTQ CX, CX
	JLE done
update:
	UPDATEROW
	DECQ CX
	JNZ update
done:
	MOVQ o+40(FP), AX
	STROW(AX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET

// The three passes of a verify block's rows on one head (deltaRowsFast,
// deltarows_simd.go): row 0's decay, the fused pass between rows t and t+1,
// and the last row's update. Each column's operations are deltaRule128's
// (so deltaStepGo's), in its order and rounding; only the passes over the
// state are fewer: T + 1 a block of T rows instead of 2T.

// func deltaDecay128(S, src, k, w unsafe.Pointer, dk, stride int, alpha float32)
//
// deltaRule128's first pass: S ← α·src; w = Sᵀk (128 floats).
TEXT ·deltaDecay128(SB), NOSPLIT, $0-52
	MOVQ S+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ k+16(FP), BX
	MOVQ dk+32(FP), CX
	MOVQ stride+40(FP), R8
	VBROADCASTSS alpha+48(FP), Z31
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	TESTQ CX, CX
	JLE ddone
ddecay:
	DECAYROW
	DECQ CX
	JNZ ddecay
ddone:
	MOVQ w+24(FP), AX
	STROW(AX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VZEROUPPER
	RET

// FUSE is one vector of the fused pass at byte off of the state row DI,
// the update's u in u, the accumulators o and w, temporaries r and t:
// r = u·k_i + S; o += q_i·r; r ← α'·r; S = r; w += k'_i·r (k_i, q_i and k'_i
// broadcast from BX, DX and R9; α' in Z31).
#define FUSE(off, u, o, w, r, t) \
	VMULPS.BCST (BX), u, r; \
	VADDPS off(DI), r, r; \
	VMULPS.BCST (DX), r, t; \
	VADDPS t, o, o; \
	VMULPS Z31, r, r; \
	VMOVUPS r, off(DI); \
	VMULPS.BCST (R9), r, t; \
	VADDPS t, w, w

// func deltaFuse128(S, k, q, u, k2, o, w2 unsafe.Pointer, dk, stride int, alpha2 float32)
//
// Row t's second pass and row t+1's first in one: with u = row t's
// β(v − w), S ← S + k uᵀ; o = Sᵀq (row t's output); then S ← α₂·S;
// w₂ = Sᵀk₂ (row t+1's).
TEXT ·deltaFuse128(SB), NOSPLIT, $0-76
	MOVQ S+0(FP), DI
	MOVQ k+8(FP), BX
	MOVQ q+16(FP), DX
	MOVQ u+24(FP), AX
	MOVQ k2+32(FP), R9
	MOVQ dk+56(FP), CX
	MOVQ stride+64(FP), R8
	VBROADCASTSS alpha2+72(FP), Z31
	LDROW(AX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	TESTQ CX, CX
	JLE fdone
fuse:
	FUSE(0, Z0, Z8, Z16, Z24, Z28)
	FUSE(64, Z1, Z9, Z17, Z25, Z29)
	FUSE(128, Z2, Z10, Z18, Z26, Z30)
	FUSE(192, Z3, Z11, Z19, Z27, Z28)
	FUSE(256, Z4, Z12, Z20, Z24, Z29)
	FUSE(320, Z5, Z13, Z21, Z25, Z30)
	FUSE(384, Z6, Z14, Z22, Z26, Z28)
	FUSE(448, Z7, Z15, Z23, Z27, Z29)
	ADDQ R8, DI
	ADDQ $4, BX
	ADDQ $4, DX
	ADDQ $4, R9
	DECQ CX
	JNZ fuse
fdone:
	MOVQ o+40(FP), AX
	STROW(AX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ w2+48(FP), AX
	STROW(AX, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VZEROUPPER
	RET

// func deltaUpdate128(S, k, q, u, o unsafe.Pointer, dk, stride int)
//
// deltaRule128's second pass with u given: S ← S + k uᵀ; o = Sᵀq.
TEXT ·deltaUpdate128(SB), NOSPLIT, $0-56
	MOVQ u+24(FP), AX
	LDROW(AX, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ S+0(FP), DI
	MOVQ k+8(FP), BX
	MOVQ q+16(FP), DX
	MOVQ dk+40(FP), CX
	MOVQ stride+48(FP), R8
	TESTQ CX, CX
	JLE udone
uupdate:
	UPDATEROW
	DECQ CX
	JNZ uupdate
udone:
	MOVQ o+32(FP), AX
	STROW(AX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET
