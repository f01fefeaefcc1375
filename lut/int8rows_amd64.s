//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"
#include "int8rows_amd64.h"

// The int8-activation kernel for several rows of x (a verify block of
// speculative decoding, or decode steps of several sequences): each step
// of 64 bytes of an index row is looked up (two VPERMB, as in lut4I8) and
// multiplied by the same step of every row of x (VPDPBUSD), so the
// weights are read from memory once for up to eight rows. x and its
// scales come interleaved by step (int8rows.go): step s of row t at
// xq + (s·T + t)·128, the scales of block b of row t at
// ds + (b·T + t)·64.
//
// Index rows go four at a time (a quad, rows q0…q3 one after another in
// w) and x rows four at a time (a half: rows 0…3, then 4…7): each 64
// bytes of x loaded meet the four index rows' looked-up steps. A block
// (four steps) runs for the first half, then again for the second half
// on the same lines of codes, now in L1, looked up again. One index row
// at a time (sixteen loads of x a step at T = 8, for one load of codes)
// ran from DRAM at half its speed from L3 on a Zen 5 EPYC, and the same
// kernel with half of those loads (a timing experiment) 1.7× faster from
// DRAM: the loads of x, not the arithmetic, kept it from running ahead
// of the code stream. Quads made T = 8 products from DRAM 1.3–2.2×
// faster (2048×6912 most: eight rows of its x, 55 KB, do not fit L1) and
// a verify block of eight rows of the synth-1.4b 1.4× faster; in cache
// T = 8 is unchanged and T = 2…4 run 1.2–2.1× faster (BENCHMARKS.md,
// issue 14).
//
// Quad row i's int32 lanes of x row 4h + j go to Z(4j + i); the float32
// lanes of every (index row, x row) are kept in the frame at t·512 + r·64
// (x row t, index row r of the group), where they are staged for the
// group's sums. Integer sums are exact, and the float32 steps are
// lut4I8's in the same order (FOLD per block, TREE8 per group of eight
// index rows), so every row gets lut4I8's bits.

#define int8Ahead 4096

// QLOAD loads step SI of the quad's four index rows (q0 at SI, q1 at
// SI + R11, q2 at R12 = SI + 2·R11, q3 at R12 + R11) and looks them up:
// row i's low nibbles into Z(16 + 2i), its high nibbles into Z(17 + 2i).
#define QLOAD \
	VMOVDQU64 (SI), Z16; \
	VMOVDQU64 (SI)(R11*1), Z18; \
	LEAQ (SI)(R11*2), R12; \
	VMOVDQU64 (R12), Z20; \
	VMOVDQU64 (R12)(R11*1), Z22; \
	VPSRLW $4, Z16, Z17; \
	VPSRLW $4, Z18, Z19; \
	VPSRLW $4, Z20, Z21; \
	VPSRLW $4, Z22, Z23; \
	VPERMB Z26, Z16, Z16; \
	VPERMB Z26, Z17, Z17; \
	VPERMB Z26, Z18, Z18; \
	VPERMB Z26, Z19, Z19; \
	VPERMB Z26, Z20, Z20; \
	VPERMB Z26, Z21, Z21; \
	VPERMB Z26, Z22, Z22; \
	VPERMB Z26, Z23, Z23

// QFETCH prefetches the quad's four rows int8Ahead bytes on (after QLOAD),
// into L1: with PREFETCHT1 (into L2) a synth-1.4b verify block of eight
// rows spent 4–6% more in its products (six of seven alternations), the
// 6912×2048 and 2048×6912 products from DRAM ran 7–20% slower, and in
// cache the two ran alike (BENCHMARKS.md, issue 14).
#define QFETCH \
	PREFETCHT0 int8Ahead(SI); \
	PREFETCHT0 int8Ahead(SI)(R11*1); \
	PREFETCHT0 int8Ahead(R12); \
	PREFETCHT0 int8Ahead(R12)(R11*1)

// QNEXT moves SI from the end of q0 (the start of q1) past q3.
#define QNEXT \
	LEAQ (SI)(R11*2), SI; \
	ADDQ R11, SI

// func lut4I8T(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)
//
// For groups consecutive groups of eight index rows from w (each 64·steps
// bytes, one table) and rows (1…8) rows of x, h[t·hstride + k] = Σ d·S
// of index row k and x row t (int8RowGo's value, bit for bit).
TEXT ·lut4I8T(SB), 0, $4096-72
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	QUADS(QLOAD, QFETCH, QNEXT)
