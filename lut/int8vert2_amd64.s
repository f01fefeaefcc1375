//go:build goexperiment.simd

#include "textflag.h"

#include "int8vert_amd64.h"

// The 2x16 tile kernels: a 2-vector index row r gives outputs 2r and 2r
// + 1, so a strip of 16 index rows gives 32 outputs. A tile is looked up
// in both components' tables (Z26, Z30: four VPERMB) and meets each row
// of x with four VPDPBUSD.BCST; row t's int32 sums are Z(t) (component
// 0) and Z(4+t) (component 1), its float32 sums Z(8+t) and Z(12+t), for
// up to four rows of x a call (the eight-row chunks of the multi-row
// layout go as two calls: x and its scales at xq and ds of the call's
// first row, their strides a step and a block given, xstride and
// dstride). The outputs are interleaved (VPERMT2PS by Z28, Z29) before
// they are scaled as int8Scale scales them.

// V2LOOKAT loads the tile at SI + off and looks it up in both tables:
// component 0 into Z16/Z17, component 1 into Z20/Z21.
#define V2LOOKAT(off) \
	VMOVDQU64 off(SI), Z16; \
	PREFETCHT0 (vertAhead+off)(SI); \
	VPSRLW $4, Z16, Z17; \
	VPERMB Z30, Z16, Z20; \
	VPERMB Z30, Z17, Z21; \
	VPERMB Z26, Z16, Z16; \
	VPERMB Z26, Z17, Z17

// V2DOT adds the looked-up tile times x row t to both components' sums.
#define V2DOT(t, a0, a1) \
	VPDPBUSD.BCST (t*128)(R12), Z16, a0; \
	VPDPBUSD.BCST (t*128+64)(R12), Z17, a0; \
	VPDPBUSD.BCST (t*128)(R12), Z20, a1; \
	VPDPBUSD.BCST (t*128+64)(R12), Z21, a1

// V2OUT interleaves row t's sums f0 (outputs 2r) and f1 (2r + 1) into
// the strip's 32 outputs, scales them and stores them at R14.
#define V2OUT(t, f0, f1) \
	VMOVAPS f0, Z22; \
	VPERMT2PS f1, Z28, Z22; \
	VMOVAPS f0, Z23; \
	VPERMT2PS f1, Z29, Z23; \
	VSUBPS.BCST (t*4)(R13), Z22, Z22; \
	VMULPS Z27, Z22, Z22; \
	VMULPS (R12), Z22, Z22; \
	VMOVUPS Z22, (R14); \
	VSUBPS.BCST (t*4)(R13), Z23, Z23; \
	VMULPS Z27, Z23, Z23; \
	VMULPS 64(R12), Z23, Z23; \
	VMOVUPS Z23, 64(R14)

#define V2ZERO1 \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z12, Z12, Z12
#define V2ZACC1 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z4, Z4, Z4
#define V2DOTS1 \
	V2DOT(0, Z0, Z4)
#define V2FOLDS1 \
	VFOLD(0, Z0, Z8); \
	VFOLD(0, Z4, Z12)
#define V2STORE1 \
	V2OUT(0, Z8, Z12)

#define V2ZERO2 \
	V2ZERO1; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z13, Z13, Z13
#define V2ZACC2 \
	V2ZACC1; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z5, Z5, Z5
#define V2DOTS2 \
	V2DOTS1; \
	V2DOT(1, Z1, Z5)
#define V2FOLDS2 \
	V2FOLDS1; \
	VFOLD(1, Z1, Z9); \
	VFOLD(1, Z5, Z13)
#define V2STORE2 \
	V2STORE1; \
	ADDQ R11, R14; \
	V2OUT(1, Z9, Z13)

#define V2ZERO3 \
	V2ZERO2; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z14, Z14, Z14
#define V2ZACC3 \
	V2ZACC2; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z6, Z6, Z6
#define V2DOTS3 \
	V2DOTS2; \
	V2DOT(2, Z2, Z6)
#define V2FOLDS3 \
	V2FOLDS2; \
	VFOLD(2, Z2, Z10); \
	VFOLD(2, Z6, Z14)
#define V2STORE3 \
	V2STORE2; \
	ADDQ R11, R14; \
	V2OUT(2, Z10, Z14)

#define V2ZERO4 \
	V2ZERO3; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z15, Z15, Z15
#define V2ZACC4 \
	V2ZACC3; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z7, Z7, Z7
#define V2DOTS4 \
	V2DOTS3; \
	V2DOT(3, Z3, Z7)
#define V2FOLDS4 \
	V2FOLDS3; \
	VFOLD(3, Z3, Z11); \
	VFOLD(3, Z7, Z15)
#define V2STORE4 \
	V2STORE3; \
	ADDQ R11, R14; \
	V2OUT(3, Z11, Z15)

// V2START loads a kernel's tables (Z26, Z30), c (Z27), the
// interleaving indices (Z28, Z29) and x's strides (R15, R8).
#define V2START \
	MOVQ tab+0(FP), AX; \
	VMOVDQU64 (AX), Z26; \
	VMOVDQU64 64(AX), Z30; \
	MOVQ cs+72(FP), AX; \
	VBROADCASTSS (AX), Z27; \
	VMOVDQU64 vec2Lo<>(SB), Z28; \
	VMOVDQU64 vec2Hi<>(SB), Z29; \
	MOVQ xstride+88(FP), R15; \
	MOVQ dstride+96(FP), R8

// func vec2I8V1(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V1(SB), NOSPLIT, $0-104
	V2START
	VBODY(V2LOOKAT, V2ZERO1, V2ZACC1, V2DOTS1, V2FOLDS1, V2STORE1, 128, 7)

// func vec2I8V2(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V2(SB), NOSPLIT, $0-104
	V2START
	VBODY(V2LOOKAT, V2ZERO2, V2ZACC2, V2DOTS2, V2FOLDS2, V2STORE2, 128, 7)

// func vec2I8V3(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V3(SB), NOSPLIT, $0-104
	V2START
	VBODY(V2LOOKAT, V2ZERO3, V2ZACC3, V2DOTS3, V2FOLDS3, V2STORE3, 128, 7)

// func vec2I8V4(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V4(SB), NOSPLIT, $0-104
	V2START
	VBODY(V2LOOKAT, V2ZERO4, V2ZACC4, V2DOTS4, V2FOLDS4, V2STORE4, 128, 7)

// vec2Lo and vec2Hi interleave two vectors a, b (VPERMT2PS): a0 b0 a1 b1 … a7 b7, then a8 b8 … a15 b15.
DATA vec2Lo<>+0(SB)/4, $0
DATA vec2Lo<>+4(SB)/4, $16
DATA vec2Lo<>+8(SB)/4, $1
DATA vec2Lo<>+12(SB)/4, $17
DATA vec2Lo<>+16(SB)/4, $2
DATA vec2Lo<>+20(SB)/4, $18
DATA vec2Lo<>+24(SB)/4, $3
DATA vec2Lo<>+28(SB)/4, $19
DATA vec2Lo<>+32(SB)/4, $4
DATA vec2Lo<>+36(SB)/4, $20
DATA vec2Lo<>+40(SB)/4, $5
DATA vec2Lo<>+44(SB)/4, $21
DATA vec2Lo<>+48(SB)/4, $6
DATA vec2Lo<>+52(SB)/4, $22
DATA vec2Lo<>+56(SB)/4, $7
DATA vec2Lo<>+60(SB)/4, $23
GLOBL vec2Lo<>(SB), RODATA|NOPTR, $64
DATA vec2Hi<>+0(SB)/4, $8
DATA vec2Hi<>+4(SB)/4, $24
DATA vec2Hi<>+8(SB)/4, $9
DATA vec2Hi<>+12(SB)/4, $25
DATA vec2Hi<>+16(SB)/4, $10
DATA vec2Hi<>+20(SB)/4, $26
DATA vec2Hi<>+24(SB)/4, $11
DATA vec2Hi<>+28(SB)/4, $27
DATA vec2Hi<>+32(SB)/4, $12
DATA vec2Hi<>+36(SB)/4, $28
DATA vec2Hi<>+40(SB)/4, $13
DATA vec2Hi<>+44(SB)/4, $29
DATA vec2Hi<>+48(SB)/4, $14
DATA vec2Hi<>+52(SB)/4, $30
DATA vec2Hi<>+56(SB)/4, $15
DATA vec2Hi<>+60(SB)/4, $31
GLOBL vec2Hi<>(SB), RODATA|NOPTR, $64
