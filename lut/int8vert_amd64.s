//go:build goexperiment.simd

#include "textflag.h"

#include "int8vert_amd64.h"

// The tile kernels of 4-bit scalar LUTs (int8vert_amd64.h has their
// layout, registers and body), and the transposition that makes tiles.

// VDOT adds the looked-up tile times x row t's dwords at R12 to Z(t).
#define VDOT(t, acc) \
	VPDPBUSD.BCST (t*128)(R12), Z16, acc; \
	VPDPBUSD.BCST (t*128+64)(R12), Z17, acc

// VOUT stores x row t's sums f of the strip's 16 outputs at R14 as
// int8Scale makes them outputs: s·(c·(f − k_t)), k_t at R13 + 4t, c in
// Z27, the strip's scales s at R12 (the same operations, so its bits).
#define VOUT(t, f) \
	VSUBPS.BCST (t*4)(R13), f, f; \
	VMULPS Z27, f, f; \
	VMULPS (R12), f, f; \
	VMOVUPS f, (R14)

// VZEROn, VZACCn, VDOTSn, VFOLDSn and VSTOREn are VBODY's steps for n
// rows of x: those for n − 1 rows, then row n − 1's.
#define VZERO1 \
	VPXORD Z8, Z8, Z8
#define VZACC1 \
	VPXORD Z0, Z0, Z0
#define VDOTS1 \
	VDOT(0, Z0)
#define VFOLDS1 \
	VFOLD(0, Z0, Z8)
#define VSTORE1 \
	VOUT(0, Z8)

#define VZERO2 \
	VZERO1; \
	VPXORD Z9, Z9, Z9
#define VZACC2 \
	VZACC1; \
	VPXORD Z1, Z1, Z1
#define VDOTS2 \
	VDOTS1; \
	VDOT(1, Z1)
#define VFOLDS2 \
	VFOLDS1; \
	VFOLD(1, Z1, Z9)
#define VSTORE2 \
	VSTORE1; \
	ADDQ R11, R14; \
	VOUT(1, Z9)

#define VZERO3 \
	VZERO2; \
	VPXORD Z10, Z10, Z10
#define VZACC3 \
	VZACC2; \
	VPXORD Z2, Z2, Z2
#define VDOTS3 \
	VDOTS2; \
	VDOT(2, Z2)
#define VFOLDS3 \
	VFOLDS2; \
	VFOLD(2, Z2, Z10)
#define VSTORE3 \
	VSTORE2; \
	ADDQ R11, R14; \
	VOUT(2, Z10)

#define VZERO4 \
	VZERO3; \
	VPXORD Z11, Z11, Z11
#define VZACC4 \
	VZACC3; \
	VPXORD Z3, Z3, Z3
#define VDOTS4 \
	VDOTS3; \
	VDOT(3, Z3)
#define VFOLDS4 \
	VFOLDS3; \
	VFOLD(3, Z3, Z11)
#define VSTORE4 \
	VSTORE3; \
	ADDQ R11, R14; \
	VOUT(3, Z11)

#define VZERO5 \
	VZERO4; \
	VPXORD Z12, Z12, Z12
#define VZACC5 \
	VZACC4; \
	VPXORD Z4, Z4, Z4
#define VDOTS5 \
	VDOTS4; \
	VDOT(4, Z4)
#define VFOLDS5 \
	VFOLDS4; \
	VFOLD(4, Z4, Z12)
#define VSTORE5 \
	VSTORE4; \
	ADDQ R11, R14; \
	VOUT(4, Z12)

#define VZERO6 \
	VZERO5; \
	VPXORD Z13, Z13, Z13
#define VZACC6 \
	VZACC5; \
	VPXORD Z5, Z5, Z5
#define VDOTS6 \
	VDOTS5; \
	VDOT(5, Z5)
#define VFOLDS6 \
	VFOLDS5; \
	VFOLD(5, Z5, Z13)
#define VSTORE6 \
	VSTORE5; \
	ADDQ R11, R14; \
	VOUT(5, Z13)

#define VZERO7 \
	VZERO6; \
	VPXORD Z14, Z14, Z14
#define VZACC7 \
	VZACC6; \
	VPXORD Z6, Z6, Z6
#define VDOTS7 \
	VDOTS6; \
	VDOT(6, Z6)
#define VFOLDS7 \
	VFOLDS6; \
	VFOLD(6, Z6, Z14)
#define VSTORE7 \
	VSTORE6; \
	ADDQ R11, R14; \
	VOUT(6, Z14)

#define VZERO8 \
	VZERO7; \
	VPXORD Z15, Z15, Z15
#define VZACC8 \
	VZACC7; \
	VPXORD Z7, Z7, Z7
#define VDOTS8 \
	VDOTS7; \
	VDOT(7, Z7)
#define VFOLDS8 \
	VFOLDS7; \
	VFOLD(7, Z7, Z15)
#define VSTORE8 \
	VSTORE7; \
	ADDQ R11, R14; \
	VOUT(7, Z15)

// func lut4I8V1(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V1(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $128, R15
	MOVQ $64, R8
	VBODY(VLOOKAT, VZERO1, VZACC1, VDOTS1, VFOLDS1, VSTORE1, 64, 6)

// func lut4I8V2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V2(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $256, R15
	MOVQ $128, R8
	VBODY(VLOOKAT, VZERO2, VZACC2, VDOTS2, VFOLDS2, VSTORE2, 64, 6)

// func lut4I8V3(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V3(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $384, R15
	MOVQ $192, R8
	VBODY(VLOOKAT, VZERO3, VZACC3, VDOTS3, VFOLDS3, VSTORE3, 64, 6)

// func lut4I8V4(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V4(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $512, R15
	MOVQ $256, R8
	VBODY(VLOOKAT, VZERO4, VZACC4, VDOTS4, VFOLDS4, VSTORE4, 64, 6)

// func lut4I8V5(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V5(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $640, R15
	MOVQ $320, R8
	VBODY(VLOOKAT, VZERO5, VZACC5, VDOTS5, VFOLDS5, VSTORE5, 64, 6)

// func lut4I8V6(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V6(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $768, R15
	MOVQ $384, R8
	VBODY(VLOOKAT, VZERO6, VZACC6, VDOTS6, VFOLDS6, VSTORE6, 64, 6)

// func lut4I8V7(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V7(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $896, R15
	MOVQ $448, R8
	VBODY(VLOOKAT, VZERO7, VZACC7, VDOTS7, VFOLDS7, VSTORE7, 64, 6)

// func lut4I8V8(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)
TEXT ·lut4I8V8(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	MOVQ $1024, R15
	MOVQ $512, R8
	VBODY(VLOOKAT, VZERO8, VZACC8, VDOTS8, VFOLDS8, VSTORE8, 64, 6)

// vertIota is 0…15, the lanes' numbers.
DATA vertIota<>+0(SB)/4, $0
DATA vertIota<>+4(SB)/4, $1
DATA vertIota<>+8(SB)/4, $2
DATA vertIota<>+12(SB)/4, $3
DATA vertIota<>+16(SB)/4, $4
DATA vertIota<>+20(SB)/4, $5
DATA vertIota<>+24(SB)/4, $6
DATA vertIota<>+28(SB)/4, $7
DATA vertIota<>+32(SB)/4, $8
DATA vertIota<>+36(SB)/4, $9
DATA vertIota<>+40(SB)/4, $10
DATA vertIota<>+44(SB)/4, $11
DATA vertIota<>+48(SB)/4, $12
DATA vertIota<>+52(SB)/4, $13
DATA vertIota<>+56(SB)/4, $14
DATA vertIota<>+60(SB)/4, $15
GLOBL vertIota<>(SB), RODATA|NOPTR, $64

// func vertStrip16(dst unsafe.Pointer, rows unsafe.Pointer, n int, steps int)
//
// vertStrip's twin: the strip's tiles in order, each gathered from its 16
// rows (VPGATHERDD, lane r at rows + r·n) and stored whole. Registers: Z1
// the offsets r·n, SI the block's first step in row 0, R11 its lane k,
// R12 the tile's dword in row 0, R9 steps in the block, R8 steps done,
// DX lanes left, R13 tiles left in the lane.
TEXT ·vertStrip16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), SI
	MOVQ n+16(FP), AX
	MOVQ steps+24(FP), CX
	VPBROADCASTD AX, Z1
	VPMULLD vertIota<>(SB), Z1, Z1
	XORQ R8, R8
	TESTQ CX, CX
	JLE gdone

gblock:
	MOVQ CX, R9
	SUBQ R8, R9
	CMPQ R9, $4
	JLE gsteps
	MOVQ $4, R9

gsteps:
	MOVQ SI, R11
	MOVQ $16, DX

glane:
	MOVQ R11, R12
	MOVQ R9, R13

gtile:
	KXNORW K1, K1, K1
	VPGATHERDD (R12)(Z1*1), K1, Z0
	VMOVDQU64 Z0, (DI)
	ADDQ $64, DI
	ADDQ $64, R12
	DECQ R13
	JNZ gtile
	ADDQ $4, R11
	DECQ DX
	JNZ glane
	MOVQ R9, R10
	SHLQ $6, R10
	ADDQ R10, SI
	ADDQ R9, R8
	CMPQ R8, CX
	JLT gblock

gdone:
	VZEROUPPER
	RET
