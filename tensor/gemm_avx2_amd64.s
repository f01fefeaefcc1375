//go:build goexperiment.simd

#include "textflag.h"

// GEMM4X16K adds one column j of the packed panel (16 floats at off(DX))
// times x[t][j] (at off2(x_t)(BX*1), t = 0…3: SI, R11, R12, R13) to the
// accumulators Y(2t), Y(2t+1).
#define GEMM4X16K(off, off2) \
	VMOVUPS off(DX), Y8; \
	VMOVUPS off+32(DX), Y9; \
	VBROADCASTSS off2(SI)(BX*1), Y10; \
	VBROADCASTSS off2(R11)(BX*1), Y11; \
	VBROADCASTSS off2(R12)(BX*1), Y12; \
	VBROADCASTSS off2(R13)(BX*1), Y13; \
	VFMADD231PS Y8, Y10, Y0; \
	VFMADD231PS Y9, Y10, Y1; \
	VFMADD231PS Y8, Y11, Y2; \
	VFMADD231PS Y9, Y11, Y3; \
	VFMADD231PS Y8, Y12, Y4; \
	VFMADD231PS Y9, Y12, Y5; \
	VFMADD231PS Y8, Y13, Y6; \
	VFMADD231PS Y9, Y13, Y7

// GEMMSTORE stores (or, with AX ≠ 0, adds to what is there) the
// accumulators a (columns 0–7) and b (8–15) at (DI).
#define GEMMSTORE(a, b, skip) \
	TESTQ AX, AX; \
	JZ skip; \
	VADDPS (DI), a, a; \
	VADDPS 32(DI), b, b; \
skip: \
	VMOVUPS a, (DI); \
	VMOVUPS b, 32(DI)

// func gemm4x16avx2(d *float32, ldd int, x *float32, ldx int, p *float32, kc int, add bool)
//
// gemm4x16x8Go's tile in assembly: d[t·ldd + r] (+)= Σ_j x[t·ldx + j] ·
// p[16j + r] for t < 4, r < 16, j < kc, one fused multiply-add per
// product in j order (the Go twin's bits). The Go compiler's code for the
// twin moved every accumulator between registers each step and loaded
// each broadcast through a scalar register: half the FMA rate.
TEXT ·gemm4x16avx2(SB), NOSPLIT, $0-49
	MOVQ d+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R9
	MOVQ p+32(FP), DX
	MOVQ kc+40(FP), CX
	MOVBQZX add+48(FP), AX
	SHLQ $2, R8 // bytes between rows of d
	SHLQ $2, R9 // bytes between rows of x
	SHLQ $2, CX // bytes of a row of x read
	LEAQ (SI)(R9*1), R11
	LEAQ (SI)(R9*2), R12
	LEAQ (R11)(R9*2), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ BX, BX
	MOVQ CX, R10
	ANDQ $-8, R10 // bytes done two columns a pass
	JZ gone

gtwo:
	GEMM4X16K(0, 0)
	GEMM4X16K(64, 4)
	ADDQ $128, DX
	ADDQ $8, BX
	CMPQ BX, R10
	JLT gtwo

gone:
	CMPQ BX, CX
	JGE gstore
	GEMM4X16K(0, 0)

gstore:
	GEMMSTORE(Y0, Y1, g0)
	ADDQ R8, DI
	GEMMSTORE(Y2, Y3, g1)
	ADDQ R8, DI
	GEMMSTORE(Y4, Y5, g2)
	ADDQ R8, DI
	GEMMSTORE(Y6, Y7, g3)
	VZEROUPPER
	RET
