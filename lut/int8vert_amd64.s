//go:build goexperiment.simd

#include "textflag.h"

// The tile kernels (int8vert.go: the layout, the order of the sums and
// the twin, int8VertRowGo). One call runs strips consecutive strips of
// tiles from w, for T = 1…8 rows of x (one TEXT a T, the body VBODY with
// that T's macros). Per strip: the float32 sums of x row t are Z(8+t),
// 16 outputs a register; per block b and lane k, the int32 sums Z(t) are
// cleared, take the block's S tiles (s < S), each looked up once (VPSRLW,
// two VPERMB as the row-major kernels) and multiplied by x row t's
// broadcast dwords of columns 8k… of step s (even ones at
// xq + (s·T + t)·128 + 4k, odd ones 64 bytes on: VPDPBUSD.BCST), then
// are folded: Z(8+t) += float32(Z(t))·d, d = ds[(b·T + t)·16 + k]
// broadcast, rounded after the product and after the sum
// (int8VertRowGo's order). x of a block (T·512 bytes) stays in L1 while
// its 16 lanes pass; the codes are one sequential stream, prefetched
// vertAhead bytes on.
//
// Registers: Z0–Z7 int32 sums, Z8–Z15 float32 sums, Z16/Z17 a tile's low
// and high nibbles looked up, Z26 the table. SI the tiles, DI x at the
// block's start, R12 x of the tile, R14 x of the lane, R13 the lane's
// scale (ds + b·T·64 + 4k), R8 scale bytes a block (T·64), R15 x bytes a
// step (T·128), AX steps left, R10 steps in the block, CX tiles left in
// the lane, DX lanes left, BX strips left, R9 h, R11 hstride in bytes.

#define vertAhead 4096

// VLOOKAT loads the tile at SI + off and looks it up.
#define VLOOKAT(off) \
	VMOVDQU64 off(SI), Z16; \
	PREFETCHT0 (vertAhead+off)(SI); \
	VPSRLW $4, Z16, Z17; \
	VPERMB Z26, Z16, Z16; \
	VPERMB Z26, Z17, Z17


// VDOT adds the looked-up tile times x row t's dwords at R12 to Z(t).
#define VDOT(t, acc) \
	VPDPBUSD.BCST (t*128)(R12), Z16, acc; \
	VPDPBUSD.BCST (t*128+64)(R12), Z17, acc

// VFOLD folds Z(t) into Z(8+t) with x row t's scale at R13.
#define VFOLD(t, acc, f) \
	VCVTDQ2PS acc, acc; \
	VMULPS.BCST (t*64)(R13), acc, acc; \
	VADDPS acc, f, f

// VOUT stores x row t's sums f of the strip's 16 outputs at R14 as
// int8Scale makes them outputs: s·(c·(f − k_t)), k_t at R13 + 4t, c in
// Z27, the strip's scales s at R12 (the same operations, so its bits).
#define VOUT(t, f) \
	VSUBPS.BCST (t*4)(R13), f, f; \
	VMULPS Z27, f, f; \
	VMULPS (R12), f, f; \
	VMOVUPS f, (R14)

// VBODY is a kernel after its table is loaded: zero clears the float32
// sums, zacc the int32 ones, dots multiplies a tile by every row, fold
// folds every row, store writes the strip's sums (R14 scratch). A lane
// of a whole block runs its four tiles unrolled (one and two rows of x
// in L1 on one core, 256×4096: 5.8–6.0 → 5.7 µs, 8.7 → 8.3 µs), a short
// last block's in a loop.
#define VBODY(look, zero, zacc, dots, fold, store, hbytes, hshift) \
	MOVQ w+8(FP), SI; \
	MOVQ strips+40(FP), BX; \
	MOVQ h+48(FP), R9; \
	MOVQ hstride+56(FP), R11; \
	SHLQ $2, R11; \
	TESTQ BX, BX; \
	JLE vdone; \
	CMPQ steps+16(FP), $0; \
	JLE vdone; \
vstrip: \
	zero; \
	MOVQ xq+24(FP), DI; \
	MOVQ ds+32(FP), R13; \
	MOVQ steps+16(FP), AX; \
vblock: \
	MOVQ $4, R10; \
	CMPQ AX, $4; \
	CMOVQLT AX, R10; \
	MOVQ $16, DX; \
	MOVQ DI, R14; \
vlane: \
	zacc; \
	MOVQ R14, R12; \
	CMPQ R10, $4; \
	JNE vshort; \
	look(0); \
	dots; \
	ADDQ R15, R12; \
	look(64); \
	dots; \
	ADDQ R15, R12; \
	look(128); \
	dots; \
	ADDQ R15, R12; \
	look(192); \
	dots; \
	ADDQ $256, SI; \
	JMP vfold; \
vshort: \
	MOVQ R10, CX; \
vtile: \
	look(0); \
	dots; \
	ADDQ $64, SI; \
	ADDQ R15, R12; \
	DECQ CX; \
	JNZ vtile; \
vfold: \
	fold; \
	ADDQ $4, R14; \
	ADDQ $4, R13; \
	DECQ DX; \
	JNZ vlane; \
	LEAQ -64(R13)(R8*1), R13; \
	MOVQ R15, R12; \
	SHLQ $2, R12; \
	ADDQ R12, DI; \
	SUBQ R10, AX; \
	JNZ vblock; \
	MOVQ strips+40(FP), R12; \
	SUBQ BX, R12; \
	SHLQ $hshift, R12; \
	ADDQ ss+80(FP), R12; \
	MOVQ ks+64(FP), R13; \
	MOVQ R9, R14; \
	store; \
	ADDQ $hbytes, R9; \
	DECQ BX; \
	JNZ vstrip; \
vdone: \
	VZEROUPPER; \
	RET

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

// func vec2I8V1(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V1(SB), NOSPLIT, $0-104
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	VMOVDQU64 vec2Lo<>(SB), Z28
	VMOVDQU64 vec2Hi<>(SB), Z29
	MOVQ xstride+88(FP), R15
	MOVQ dstride+96(FP), R8
	VBODY(V2LOOKAT, V2ZERO1, V2ZACC1, V2DOTS1, V2FOLDS1, V2STORE1, 128, 7)

// func vec2I8V2(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V2(SB), NOSPLIT, $0-104
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	VMOVDQU64 vec2Lo<>(SB), Z28
	VMOVDQU64 vec2Hi<>(SB), Z29
	MOVQ xstride+88(FP), R15
	MOVQ dstride+96(FP), R8
	VBODY(V2LOOKAT, V2ZERO2, V2ZACC2, V2DOTS2, V2FOLDS2, V2STORE2, 128, 7)

// func vec2I8V3(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V3(SB), NOSPLIT, $0-104
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	VMOVDQU64 vec2Lo<>(SB), Z28
	VMOVDQU64 vec2Hi<>(SB), Z29
	MOVQ xstride+88(FP), R15
	MOVQ dstride+96(FP), R8
	VBODY(V2LOOKAT, V2ZERO3, V2ZACC3, V2DOTS3, V2FOLDS3, V2STORE3, 128, 7)

// func vec2I8V4(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)
TEXT ·vec2I8V4(SB), NOSPLIT, $0-104
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	MOVQ cs+72(FP), AX
	VBROADCASTSS (AX), Z27
	VMOVDQU64 vec2Lo<>(SB), Z28
	VMOVDQU64 vec2Hi<>(SB), Z29
	MOVQ xstride+88(FP), R15
	MOVQ dstride+96(FP), R8
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
