//go:build goexperiment.simd

#include "textflag.h"

// Decode attention's dot products and weighted sums for AVX2 hosts, for
// the f32 KV cache and the int8 one (fp16 keys, int8 values);
// attention_avx2.go has their Go twins (scoresGo8, values8Go,
// scoresF16Go8, valuesInt8Go8) and says what the bits are. Assembly
// because the Go compiler's code for these loops spent more on slicing
// and spilling than on the arithmetic; for fp16 keys, also because
// archsimd has no F16C (VCVTPH2PS).

// ZERO8 zeroes the accumulators Y0–Y7.
#define ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// SCORES4 stores the four scores of a pass to (DI): each the lanes of
// Y(2i) + Y(2i+1) summed as storeScore8 sums them (halves, then adjacent
// pairs, then the pair sums), four to a 16-byte store.
#define SCORES4 \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y5, Y4, Y4; \
	VADDPS Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VEXTRACTF128 $1, Y2, X3; \
	VADDPS X3, X2, X2; \
	VEXTRACTF128 $1, Y4, X5; \
	VADDPS X5, X4, X4; \
	VEXTRACTF128 $1, Y6, X7; \
	VADDPS X7, X6, X6; \
	VHADDPS X2, X0, X0; \
	VHADDPS X6, X4, X4; \
	VHADDPS X4, X0, X0; \
	VMOVUPS X0, (DI)

// STORE8 stores the accumulators Y0–Y7 to the 64 floats at (DI).
#define STORE8 \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	VMOVUPS Y4, 128(DI); \
	VMOVUPS Y5, 160(DI); \
	VMOVUPS Y6, 192(DI); \
	VMOVUPS Y7, 224(DI)

// func scores4x8(w, q, k unsafe.Pointer, groups, stride, d int)
//
// For τ < 4·groups: w[τ] = q·k_τ, k_τ at k + 4·stride·τ bytes, d floats
// (a multiple of 16). Four positions a pass: a_i gathers the products of
// columns 16j … 16j+7 (fused multiply-adds in column order), b_i those of
// 16j+8 … 16j+15; the score is the lanes of a_i + b_i summed as
// storeScore8 sums them (halves, then adjacent pairs, then the pair
// sums), four scores to a 16-byte store.
TEXT ·scores4x8(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), R8
	MOVQ groups+24(FP), DX
	MOVQ stride+32(FP), R9
	MOVQ d+40(FP), BX
	SHLQ $2, R9 // bytes between positions
	SHLQ $2, BX // bytes of a row
	LEAQ (R9)(R9*2), R10
	TESTQ DX, DX
	JLE sdone

sgroup:
	LEAQ (R8)(R9*1), R11
	LEAQ (R8)(R9*2), R12
	LEAQ (R8)(R10*1), R13
	ZERO8
	XORQ CX, CX

scol:
	VMOVUPS (SI)(CX*1), Y8
	VMOVUPS 32(SI)(CX*1), Y9
	VFMADD231PS (R8)(CX*1), Y8, Y0
	VFMADD231PS 32(R8)(CX*1), Y9, Y1
	VFMADD231PS (R11)(CX*1), Y8, Y2
	VFMADD231PS 32(R11)(CX*1), Y9, Y3
	VFMADD231PS (R12)(CX*1), Y8, Y4
	VFMADD231PS 32(R12)(CX*1), Y9, Y5
	VFMADD231PS (R13)(CX*1), Y8, Y6
	VFMADD231PS 32(R13)(CX*1), Y9, Y7
	ADDQ $64, CX
	CMPQ CX, BX
	JLT scol

	SCORES4
	ADDQ $16, DI
	LEAQ (R8)(R9*4), R8
	DECQ DX
	JNZ sgroup

sdone:
	VZEROUPPER
	RET

// func values8x8(o, w, v unsafe.Pointer, n, stride, d int)
//
// o[c] = Σ_τ w[τ]·v_τ[c] for c < d (a multiple of 64), v_τ at v +
// 4·stride·τ bytes: per chunk of 64 columns, eight accumulators, and per
// position a product then a sum (VMULPS, VADDPS), in τ order: axpy's
// operations, attend's bits.
TEXT ·values8x8(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), R8
	MOVQ n+24(FP), DX
	MOVQ stride+32(FP), R9
	MOVQ d+40(FP), BX
	SHLQ $2, R9
	TESTQ DX, DX
	JLE vdone
	TESTQ BX, BX
	JLE vdone

vchunk:
	ZERO8
	MOVQ R8, R10 // this chunk's column in position 0
	XORQ CX, CX

vpos:
	VBROADCASTSS (SI)(CX*4), Y8
	VMULPS (R10), Y8, Y9
	VMULPS 32(R10), Y8, Y10
	VMULPS 64(R10), Y8, Y11
	VMULPS 96(R10), Y8, Y12
	VADDPS Y9, Y0, Y0
	VADDPS Y10, Y1, Y1
	VADDPS Y11, Y2, Y2
	VADDPS Y12, Y3, Y3
	VMULPS 128(R10), Y8, Y9
	VMULPS 160(R10), Y8, Y10
	VMULPS 192(R10), Y8, Y11
	VMULPS 224(R10), Y8, Y12
	VADDPS Y9, Y4, Y4
	VADDPS Y10, Y5, Y5
	VADDPS Y11, Y6, Y6
	VADDPS Y12, Y7, Y7
	ADDQ R9, R10
	INCQ CX
	CMPQ CX, DX
	JLT vpos

	STORE8
	ADDQ $256, DI
	ADDQ $256, R8
	SUBQ $64, BX
	JG vchunk

vdone:
	VZEROUPPER
	RET

// func scoresF16x4x8(w, q, k unsafe.Pointer, groups, stride, d int)
//
// scores4x8 for keys in fp16 (the int8 cache's): k_τ at k + 2·stride·τ
// bytes, widened exactly by VCVTPH2PS (F16C) before the same fused
// multiply-adds in the same order, so each score has scoresF16x8's bits.
TEXT ·scoresF16x4x8(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), R8
	MOVQ groups+24(FP), DX
	MOVQ stride+32(FP), R9
	MOVQ d+40(FP), BX
	SHLQ $1, R9 // bytes between positions
	SHLQ $1, BX // bytes of a row of keys
	LEAQ (R9)(R9*2), R10
	TESTQ DX, DX
	JLE hdone

hgroup:
	LEAQ (R8)(R9*1), R11
	LEAQ (R8)(R9*2), R12
	LEAQ (R8)(R10*1), R13
	ZERO8
	XORQ CX, CX // bytes into the keys; q is at twice that

hcol:
	VMOVUPS (SI)(CX*2), Y8
	VMOVUPS 32(SI)(CX*2), Y9
	VCVTPH2PS (R8)(CX*1), Y10
	VCVTPH2PS 16(R8)(CX*1), Y11
	VCVTPH2PS (R11)(CX*1), Y12
	VCVTPH2PS 16(R11)(CX*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y9, Y3
	VCVTPH2PS (R12)(CX*1), Y14
	VCVTPH2PS 16(R12)(CX*1), Y15
	VCVTPH2PS (R13)(CX*1), Y10
	VCVTPH2PS 16(R13)(CX*1), Y11
	VFMADD231PS Y14, Y8, Y4
	VFMADD231PS Y15, Y9, Y5
	VFMADD231PS Y10, Y8, Y6
	VFMADD231PS Y11, Y9, Y7
	ADDQ $32, CX
	CMPQ CX, BX
	JLT hcol

	SCORES4
	ADDQ $16, DI
	LEAQ (R8)(R9*4), R8
	DECQ DX
	JNZ hgroup

hdone:
	VZEROUPPER
	RET

// func valuesI8x8(o, w, v unsafe.Pointer, n, stride, d int)
//
// values8x8 for int8 values (the int8 cache's): o[c] = Σ_τ w[τ]·v_τ[c],
// v_τ at v + stride·τ bytes, each value widened (VPMOVSXBD, VCVTDQ2PS:
// exact) before the product and the sum, in τ order: attendValuesInt8x8's
// bits (w holds the scaled weights c[τ]).
TEXT ·valuesI8x8(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), R8
	MOVQ n+24(FP), DX
	MOVQ stride+32(FP), R9
	MOVQ d+40(FP), BX
	TESTQ DX, DX
	JLE idone
	TESTQ BX, BX
	JLE idone

ichunk:
	ZERO8
	MOVQ R8, R10
	XORQ CX, CX

ipos:
	VBROADCASTSS (SI)(CX*4), Y8
	VPMOVSXBD (R10), Y9
	VPMOVSXBD 8(R10), Y10
	VPMOVSXBD 16(R10), Y11
	VPMOVSXBD 24(R10), Y12
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VMULPS Y9, Y8, Y9
	VMULPS Y10, Y8, Y10
	VMULPS Y11, Y8, Y11
	VMULPS Y12, Y8, Y12
	VADDPS Y9, Y0, Y0
	VADDPS Y10, Y1, Y1
	VADDPS Y11, Y2, Y2
	VADDPS Y12, Y3, Y3
	VPMOVSXBD 32(R10), Y9
	VPMOVSXBD 40(R10), Y10
	VPMOVSXBD 48(R10), Y11
	VPMOVSXBD 56(R10), Y12
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VMULPS Y9, Y8, Y9
	VMULPS Y10, Y8, Y10
	VMULPS Y11, Y8, Y11
	VMULPS Y12, Y8, Y12
	VADDPS Y9, Y4, Y4
	VADDPS Y10, Y5, Y5
	VADDPS Y11, Y6, Y6
	VADDPS Y12, Y7, Y7
	ADDQ R9, R10
	INCQ CX
	CMPQ CX, DX
	JLT ipos

	STORE8
	ADDQ $256, DI
	ADDQ $64, R8
	SUBQ $64, BX
	JG ichunk

idone:
	VZEROUPPER
	RET

// func cpuF16C() bool
//
// Whether the CPU has F16C (CPUID leaf 1, ECX bit 29), which archsimd
// does not report.
TEXT ·cpuF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET
