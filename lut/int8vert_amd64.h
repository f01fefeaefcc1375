// Macros shared by the tile kernels: int8vert_amd64.s (4-bit scalar
// LUTs) and int8vert2_amd64.s (2x16, whose comment says how it differs).
//
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


// VFOLD folds Z(t) into Z(8+t) with x row t's scale at R13.
#define VFOLD(t, acc, f) \
	VCVTDQ2PS acc, acc; \
	VMULPS.BCST (t*64)(R13), acc, acc; \
	VADDPS acc, f, f

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
