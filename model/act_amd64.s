//go:build goexperiment.simd

#include "textflag.h"

// actRows (vec_simd.go): the SiLU and sigmoid row loops in assembly,
// the scalar sigmoid's operations (exp32x16's for its exponential) in
// their order and rounding, sixteen lanes a vector, the constants held in
// registers (the bits of the float32 constants exp32x16 broadcasts).

DATA actK<>+0(SB)/4, $0x3fb8aa3b // log2e
DATA actK<>+4(SB)/4, $0x3f000000 // 0.5
DATA actK<>+8(SB)/4, $0x3f318000 // ln2hi
DATA actK<>+12(SB)/4, $0xb95e8083 // ln2lo
DATA actK<>+16(SB)/4, $0x39500d01 // 1/5040
DATA actK<>+20(SB)/4, $0x3ab60b61 // 1/720
DATA actK<>+24(SB)/4, $0x3c088889 // 1/120
DATA actK<>+28(SB)/4, $0x3d2aaaab // 1/24
DATA actK<>+32(SB)/4, $0x3e2aaaab // 1/6
DATA actK<>+36(SB)/4, $0x3f800000 // 1
DATA actK<>+40(SB)/4, $0x42b17218 // 88.72284
DATA actK<>+44(SB)/4, $0xc2cff1b4 // -103.97208
DATA actK<>+48(SB)/4, $0x7f800000            // +Inf
DATA actK<>+52(SB)/4, $0x80000000            // the sign bit
GLOBL actK<>(SB), RODATA|NOPTR, $56

// SIGMOID sets Z5 to sigmoid(Z0) (Z1–Z6 and K1–K4 scratch): e =
// exp32x16(−|x|) (n = ⌊x·log2e + ½⌋, r = x − n·ln2hi − n·ln2lo, p the
// degree-7 Horner polynomial, e = p·2ⁿ, then the clamps and NaN), then
// (x ≥ 0 ? 1 : e)/(1 + e).
#define SIGMOID \
	VPORD Z18, Z0, Z1; \
	VMULPS Z31, Z1, Z2; \
	VADDPS Z30, Z2, Z2; \
	VRNDSCALEPS $1, Z2, Z2; \
	VMULPS Z29, Z2, Z3; \
	VSUBPS Z3, Z1, Z3; \
	VMULPS Z28, Z2, Z4; \
	VSUBPS Z4, Z3, Z3; \
	VMULPS Z27, Z3, Z4; \
	VADDPS Z26, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z25, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z24, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z23, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z30, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z22, Z4, Z4; \
	VMULPS Z4, Z3, Z4; \
	VADDPS Z22, Z4, Z4; \
	VSCALEFPS Z2, Z4, Z4; \
	VCMPPS $0x1e, Z21, Z1, K1; \
	VMOVAPS Z19, K1, Z4; \
	VCMPPS $0x11, Z20, Z1, K2; \
	VMOVAPS Z17, K2, Z4; \
	VCMPPS $3, Z1, Z1, K3; \
	VMOVAPS Z1, K3, Z4; \
	VCMPPS $0x1d, Z17, Z0, K4; \
	VMOVAPS Z4, Z5; \
	VMOVAPS Z22, K4, Z5; \
	VADDPS Z4, Z22, Z6; \
	VDIVPS Z6, Z5, Z5

// SILU makes Z5 silu(x) = x·sigmoid(x); MULY multiplies it by y's vector.
#define SILU VMULPS Z5, Z0, Z5
#define MULY VMULPS (DX), Z5, Z5

// ACTLOOP is a mode's loop, labelled top: each vector of x through
// SIGMOID, then op, to dst; y (DX) moves along whether op reads it or not.
#define ACTLOOP(top, op) \
top: \
	VMOVUPS (SI), Z0; \
	SIGMOID; \
	op; \
	VMOVUPS Z5, (DI); \
	ADDQ $64, SI; \
	ADDQ $64, DX; \
	ADDQ $64, DI; \
	DECQ CX; \
	JNZ top; \
	JMP adone

// func actRows(dst, x, y unsafe.Pointer, n, mode int)
//
// For n/16 vectors (n a multiple of 16): mode 0, dst = silu(x)·y; mode
// 1, dst = silu(x); mode 2, dst = y·sigmoid(x).
TEXT ·actRows(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ mode+32(FP), AX
	SHRQ $4, CX
	JZ adone
	LEAQ actK<>(SB), BX
	VBROADCASTSS 0(BX), Z31
	VBROADCASTSS 4(BX), Z30
	VBROADCASTSS 8(BX), Z29
	VBROADCASTSS 12(BX), Z28
	VBROADCASTSS 16(BX), Z27
	VBROADCASTSS 20(BX), Z26
	VBROADCASTSS 24(BX), Z25
	VBROADCASTSS 28(BX), Z24
	VBROADCASTSS 32(BX), Z23
	VBROADCASTSS 36(BX), Z22
	VBROADCASTSS 40(BX), Z21
	VBROADCASTSS 44(BX), Z20
	VBROADCASTSS 48(BX), Z19
	VBROADCASTSS 52(BX), Z18
	VPXORD Z17, Z17, Z17
	CMPQ AX, $1
	JEQ asilu
	CMPQ AX, $2
	JEQ asig
	ACTLOOP(aswiglu, SILU; MULY)
	ACTLOOP(asilu, SILU)
	ACTLOOP(asig, MULY)
adone:
	VZEROUPPER
	RET
