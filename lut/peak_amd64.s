//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// DP12 is twelve independent VPDPBUSD on registers (Z0–Z11): no loads, no
// dependencies between them (each accumulator's own chain is one
// instruction a round).
#define DP12 \
	VPDPBUSD Z20, Z21, Z0; \
	VPDPBUSD Z20, Z21, Z1; \
	VPDPBUSD Z20, Z21, Z2; \
	VPDPBUSD Z20, Z21, Z3; \
	VPDPBUSD Z20, Z21, Z4; \
	VPDPBUSD Z20, Z21, Z5; \
	VPDPBUSD Z20, Z21, Z6; \
	VPDPBUSD Z20, Z21, Z7; \
	VPDPBUSD Z20, Z21, Z8; \
	VPDPBUSD Z20, Z21, Z9; \
	VPDPBUSD Z20, Z21, Z10; \
	VPDPBUSD Z20, Z21, Z11

// SIX repeats an independent instruction op of the form op a, b, dst six
// times, into Z12–Z17.
#define SIX(op) \
	op Z20, Z21, Z12; \
	op Z20, Z21, Z13; \
	op Z20, Z21, Z14; \
	op Z20, Z21, Z15; \
	op Z20, Z21, Z16; \
	op Z20, Z21, Z17

// PEAKINIT clears the accumulators and operands and loads the round count.
#define PEAKINIT \
	MOVQ n+0(FP), CX; \
	ZACC; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21

// func vnniPeak(n int)
//
// n rounds of DP12: what the VNNI pipes allow.
TEXT ·vnniPeak(SB), NOSPLIT, $0-8
	PEAKINIT
	TESTQ CX, CX
	JLE done
loop:
	DP12
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func vnniMul(n int), vnniPerm(n int), vnniAdd(n int)
//
// n rounds of DP12 and six independent VMULPS, VPERMB or VADDPS: a round
// longer than DP12's shows the other instruction sharing VPDPBUSD's pipes
// (the multi-row kernel's fold multiplies, its lookups permute, its fold
// adds).
TEXT ·vnniMul(SB), NOSPLIT, $0-8
	PEAKINIT
	TESTQ CX, CX
	JLE muldone
mul:
	DP12
	SIX(VMULPS)
	DECQ CX
	JNZ mul
muldone:
	VZEROUPPER
	RET

TEXT ·vnniPerm(SB), NOSPLIT, $0-8
	PEAKINIT
	TESTQ CX, CX
	JLE permdone
perm:
	DP12
	SIX(VPERMB)
	DECQ CX
	JNZ perm
permdone:
	VZEROUPPER
	RET

TEXT ·vnniAdd(SB), NOSPLIT, $0-8
	PEAKINIT
	TESTQ CX, CX
	JLE adddone
add:
	DP12
	SIX(VADDPS)
	DECQ CX
	JNZ add
adddone:
	VZEROUPPER
	RET

// ADD4 is four dependent one-cycle adds.
#define ADD4 \
	ADDQ $1, AX; \
	ADDQ $1, AX; \
	ADDQ $1, AX; \
	ADDQ $1, AX

// func addChain(n int)
//
// n rounds of twelve dependent one-cycle ADDQ: a round is twelve cycles,
// so the clock is 12·n ÷ the time taken.
TEXT ·addChain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JLE chaindone
chain:
	ADD4
	ADD4
	ADD4
	DECQ CX
	JNZ chain
chaindone:
	RET
