//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// vec2I8T is lut4I8T (int8rows_amd64.s) for 2-vector matrices: index
// rows go two at a time (a pair, A then B in w), each looked up in both
// components' tables, and x rows four at a time, so that each 64-byte
// load of x meets four looked-up steps (two rows, two components), as in
// lut4I8T's quads. The four outputs of a pair (A's components 0 and 1,
// then B's) take the places of a quad's four index rows: quad row i's
// registers, frame slots (x row t: t·512 + R9 + i·64, two pairs a group
// of eight outputs, vec2I8's order) and group sums are lut4I8T's, so every
// row gets vec2I8's bits. It runs for three or more rows of x: verify
// blocks of eight rows of the 2x16 synth-1.4b bundle took 44.1–52.4 ms
// with it against 50.6–64.6 row by row, four rows 27.5–31.0 against
// 29.6–33.3, but two rows 18.5–21.9 against 16.9–19.3 (a Zen 5 EPYC,
// BENCHMARKS.md, issue 14).

#define vecAhead 4096

// VLOAD loads step SI of the pair (A at SI, B at SI + R11) and looks it up:
// A's component 0 low and high nibbles into Z16, Z17, component 1 into
// Z18, Z19; B's into Z20–Z23.
#define VLOAD \
	VMOVDQU64 (SI), Z18; \
	VMOVDQU64 (SI)(R11*1), Z22; \
	VPSRLW $4, Z18, Z19; \
	VPSRLW $4, Z22, Z23; \
	VPERMB Z26, Z18, Z16; \
	VPERMB Z26, Z19, Z17; \
	VPERMB Z30, Z18, Z18; \
	VPERMB Z30, Z19, Z19; \
	VPERMB Z26, Z22, Z20; \
	VPERMB Z26, Z23, Z21; \
	VPERMB Z30, Z22, Z22; \
	VPERMB Z30, Z23, Z23

// VFETCH prefetches the pair vecAhead bytes on.
#define VFETCH \
	PREFETCHT1 vecAhead(SI); \
	PREFETCHT1 vecAhead(SI)(R11*1)

// VNEXT moves SI from the end of A (the start of B) past B.
#define VNEXT ADDQ R11, SI

// func vec2I8T(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of four 2-vector index rows from w (each
// 64·steps bytes; tables tab[0:64] and tab[64:128]) and rows (1…8) rows
// of x, h[t·hstride + 2k + c] = Σ d·S of index row k, component c, and x
// row t (int8RowGo's value with component c's table, bit for bit).
TEXT ·vec2I8T(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	QUADS(VLOAD, VFETCH, VNEXT)
