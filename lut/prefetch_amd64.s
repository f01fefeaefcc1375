//go:build goexperiment.simd

#include "textflag.h"

// func prefetchLines(p unsafe.Pointer, n int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop:
	TESTQ CX, CX
	JLE done
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JMP loop
done:
	RET

// func prefetchRows(p uintptr, ld, rows, n int)
//
// PREFETCHT1 of n lines from p + k·ld, k < rows: into L2, not L1, whose
// room the T > 1 kernels need for x.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), AX
	MOVQ ld+8(FP), BX
	MOVQ rows+16(FP), DX
	MOVQ n+24(FP), R8
rows:
	TESTQ DX, DX
	JLE rowsdone
	MOVQ AX, SI
	MOVQ R8, CX
lines:
	TESTQ CX, CX
	JLE nextrow
	PREFETCHT1 (SI)
	ADDQ $64, SI
	DECQ CX
	JMP lines
nextrow:
	ADDQ BX, AX
	DECQ DX
	JMP rows
rowsdone:
	RET
