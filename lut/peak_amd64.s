//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// func vnniPeak(n int)
//
// n rounds of twelve independent VPDPBUSD on registers: no loads, no
// dependencies between them (each accumulator's own chain is twelve
// instructions long), so the round takes what the VNNI pipes allow.
TEXT ·vnniPeak(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	ZACC
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	TESTQ CX, CX
	JLE done
loop:
	VPDPBUSD Z20, Z21, Z0
	VPDPBUSD Z20, Z21, Z1
	VPDPBUSD Z20, Z21, Z2
	VPDPBUSD Z20, Z21, Z3
	VPDPBUSD Z20, Z21, Z4
	VPDPBUSD Z20, Z21, Z5
	VPDPBUSD Z20, Z21, Z6
	VPDPBUSD Z20, Z21, Z7
	VPDPBUSD Z20, Z21, Z8
	VPDPBUSD Z20, Z21, Z9
	VPDPBUSD Z20, Z21, Z10
	VPDPBUSD Z20, Z21, Z11
	DECQ CX
	JNZ loop
done:
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
