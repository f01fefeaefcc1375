// Macros shared by the multi-row int8 kernels (int8rows_amd64.s,
// int8rows1_amd64.s, vec2rows_amd64.s); include reduce_amd64.h first.

// GROUPT sums x row t's staged lanes of the group's eight index rows
// (frame t·512 …) by TREE8 and stores them at R13, then moves R13 on by
// the output row stride R11.
#define GROUPT(t) \
	VMOVUPS (t*512)(SP), Z0; \
	VMOVUPS (t*512+64)(SP), Z1; \
	VMOVUPS (t*512+128)(SP), Z2; \
	VMOVUPS (t*512+192)(SP), Z3; \
	VMOVUPS (t*512+256)(SP), Z4; \
	VMOVUPS (t*512+320)(SP), Z5; \
	VMOVUPS (t*512+384)(SP), Z6; \
	VMOVUPS (t*512+448)(SP), Z7; \
	TREE8; \
	VMOVUPS Y0, (R13); \
	ADDQ R11, R13

// DOT4 adds the looked-up step of each quad row i times the step of one
// x row (at R14 + off) to ai.
#define DOT4(off, a0, a1, a2, a3) \
	VMOVDQU64 off(R14), Z24; \
	VMOVDQU64 off+64(R14), Z25; \
	VPDPBUSD Z24, Z16, a0; \
	VPDPBUSD Z25, Z17, a0; \
	VPDPBUSD Z24, Z18, a1; \
	VPDPBUSD Z25, Z19, a1; \
	VPDPBUSD Z24, Z20, a2; \
	VPDPBUSD Z25, Z21, a2; \
	VPDPBUSD Z24, Z22, a3; \
	VPDPBUSD Z25, Z23, a3

// FOLD1 adds the int32 lanes acc (x row t, quad row i) times the block's
// scales of x row t (Z27) to their float32 lanes in the frame:
// f + float32(acc)·d, rounded after the product and the sum, as lut4I8's
// FOLD.
#define FOLD1(t, i, acc) \
	VCVTDQ2PS acc, acc; \
	VMULPS Z27, acc, acc; \
	VADDPS (t*512+i*64)(SP)(R9*1), acc, acc; \
	VMOVUPS acc, (t*512+i*64)(SP)(R9*1)

// FOLD4 folds x row t's lanes of the four quad rows.
#define FOLD4(t, a0, a1, a2, a3) \
	VMOVUPS (t*64)(R13), Z27; \
	FOLD1(t, 0, a0); \
	FOLD1(t, 1, a1); \
	FOLD1(t, 2, a2); \
	FOLD1(t, 3, a3)

// ZERO4 clears x row t's float32 lanes of the four quad rows (Z31 holds
// zeros).
#define ZERO4(t) \
	VMOVUPS Z31, (t*512)(SP)(R9*1); \
	VMOVUPS Z31, (t*512+64)(SP)(R9*1); \
	VMOVUPS Z31, (t*512+128)(SP)(R9*1); \
	VMOVUPS Z31, (t*512+192)(SP)(R9*1)

// ZACC clears the int32 lanes.
#define ZACC \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

// QUADS is the body of the quad kernels (lut4I8T, vec2I8T) after their
// tables are loaded (Z26, and Z30 for 2-vector): load looks up a step of
// the four outputs' index rows into Z16–Z23 (quad row i's low and high
// nibbles in Z(16 + 2i), Z(17 + 2i)), fetch prefetches them, next moves SI
// from the end of the first index row to the next quad's. Per block of
// four steps: x rows 0…3 (the first half), then 4…7 on the same codes;
// each half folds its int32 lanes (Z(4j + i): quad row i, x row 4h + j)
// into the frame (t·512 + R9 + i·64); a group of eight outputs ends with
// GROUPT per x row. Only the frame rows of x rows present are cleared:
// with four rows or fewer, half of the sixteen stores a quad were for
// rows no fold or sum reads (forge-tiny's verify blocks of four rows,
// whose products are two to six steps long: 396–435 → 354–386 µs a
// block). Registers: AX steps left in the row, BX rows of x, CX
// steps left in the half-block, DX and DI the codes and x at the block's
// start, R8 scale bytes a block, R9 the quad's frame offset, R10 steps in
// the block, R11 bytes of an index row (the output stride while
// summing), R12 scratch, R13 the block's scales, R14 and SI x and codes,
// R15 x bytes a step; the group count stays in the argument.
#define QUADS(load, fetch, next) \
	VPXORD Z31, Z31, Z31; \
	MOVQ w+8(FP), SI; \
	MOVQ rows+40(FP), BX; \
	MOVQ BX, R15; \
	SHLQ $7, R15; \
	MOVQ BX, R8; \
	SHLQ $6, R8; \
	CMPQ groups+48(FP), $0; \
	JLE tdone; \
	CMPQ steps+16(FP), $0; \
	JLE tdone; \
	CMPQ BX, $1; \
	JLT tdone; \
	CMPQ BX, $8; \
	JGT tdone; \
tgroup: \
	MOVQ steps+16(FP), R11; \
	SHLQ $6, R11; \
	XORQ R9, R9; \
tquad: \
	ZERO4(0); \
	ZERO4(1); \
	ZERO4(2); \
	ZERO4(3); \
	CMPQ BX, $4; \
	JLE tzeroed; \
	ZERO4(4); \
	ZERO4(5); \
	ZERO4(6); \
	ZERO4(7); \
tzeroed: \
	MOVQ steps+16(FP), AX; \
	MOVQ xq+24(FP), R14; \
	MOVQ ds+32(FP), R13; \
tblock: \
	MOVQ $4, R10; \
	CMPQ AX, $4; \
	CMOVQLT AX, R10; \
	MOVQ SI, DX; \
	MOVQ R14, DI; \
	ZACC; \
	MOVQ R10, CX; \
th0: \
	load; \
	fetch; \
	DOT4(0, Z0, Z1, Z2, Z3); \
	CMPQ BX, $1; \
	JEQ th0next; \
	DOT4(128, Z4, Z5, Z6, Z7); \
	CMPQ BX, $2; \
	JEQ th0next; \
	DOT4(256, Z8, Z9, Z10, Z11); \
	CMPQ BX, $3; \
	JEQ th0next; \
	DOT4(384, Z12, Z13, Z14, Z15); \
th0next: \
	ADDQ $64, SI; \
	ADDQ R15, R14; \
	DECQ CX; \
	JNZ th0; \
	FOLD4(0, Z0, Z1, Z2, Z3); \
	CMPQ BX, $1; \
	JEQ tblockdone; \
	FOLD4(1, Z4, Z5, Z6, Z7); \
	CMPQ BX, $2; \
	JEQ tblockdone; \
	FOLD4(2, Z8, Z9, Z10, Z11); \
	CMPQ BX, $3; \
	JEQ tblockdone; \
	FOLD4(3, Z12, Z13, Z14, Z15); \
	CMPQ BX, $4; \
	JEQ tblockdone; \
	ZACC; \
	MOVQ DX, SI; \
	MOVQ DI, R14; \
	MOVQ R10, CX; \
th1: \
	load; \
	DOT4(512, Z0, Z1, Z2, Z3); \
	CMPQ BX, $5; \
	JEQ th1next; \
	DOT4(640, Z4, Z5, Z6, Z7); \
	CMPQ BX, $6; \
	JEQ th1next; \
	DOT4(768, Z8, Z9, Z10, Z11); \
	CMPQ BX, $7; \
	JEQ th1next; \
	DOT4(896, Z12, Z13, Z14, Z15); \
th1next: \
	ADDQ $64, SI; \
	ADDQ R15, R14; \
	DECQ CX; \
	JNZ th1; \
	FOLD4(4, Z0, Z1, Z2, Z3); \
	CMPQ BX, $5; \
	JEQ tblockdone; \
	FOLD4(5, Z4, Z5, Z6, Z7); \
	CMPQ BX, $6; \
	JEQ tblockdone; \
	FOLD4(6, Z8, Z9, Z10, Z11); \
	CMPQ BX, $7; \
	JEQ tblockdone; \
	FOLD4(7, Z12, Z13, Z14, Z15); \
tblockdone: \
	ADDQ R8, R13; \
	SUBQ R10, AX; \
	JNZ tblock; \
	next; \
	ADDQ $256, R9; \
	CMPQ R9, $512; \
	JLT tquad; \
	MOVQ hstride+64(FP), R11; \
	SHLQ $2, R11; \
	MOVQ h+56(FP), R13; \
	GROUPT(0); \
	CMPQ BX, $1; \
	JEQ tsummed; \
	GROUPT(1); \
	CMPQ BX, $2; \
	JEQ tsummed; \
	GROUPT(2); \
	CMPQ BX, $3; \
	JEQ tsummed; \
	GROUPT(3); \
	CMPQ BX, $4; \
	JEQ tsummed; \
	GROUPT(4); \
	CMPQ BX, $5; \
	JEQ tsummed; \
	GROUPT(5); \
	CMPQ BX, $6; \
	JEQ tsummed; \
	GROUPT(6); \
	CMPQ BX, $7; \
	JEQ tsummed; \
	GROUPT(7); \
tsummed: \
	ADDQ $32, h+56(FP); \
	DECQ groups+48(FP); \
	JNZ tgroup; \
tdone: \
	VZEROUPPER; \
	RET
