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
