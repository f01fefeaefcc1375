//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"

// T = 1 kernels for 4-bit codes (kernel_avx512.go: the phase layout;
// kernel_simd.go: the drivers and their bounds guarantees). Written in
// assembly because the Go compiler's FMA form overwrites a multiplicand
// (a register move per accumulator per step), reloads x for every row
// and allocates only Z0–Z14; here x is loaded once per block,
// accumulators take the FMA in place (VFMADD231PS), and with Z0–Z31 each
// row gets two of them. The bottleneck is the 512-bit VPERMPS (about two
// cycles each on Zen 4): one per 16 weights.

// HSUM stores the sum of the 16 lanes of Zi (i < 8, so that the VEX-only
// VHADDPS can name Xi) to off(DX); Y8 is scratch.
#define HSUM(Zi, Yi, Xi, off) \
	VEXTRACTF64X4 $1, Zi, Y8; \
	VADDPS Y8, Yi, Yi; \
	VEXTRACTF128 $1, Yi, X8; \
	VADDPS X8, Xi, Xi; \
	VHADDPS Xi, Xi, Xi; \
	VHADDPS Xi, Xi, Xi; \
	VMOVSS Xi, off(DX)

// ZERO16 clears the accumulators Z0–Z15.
#define ZERO16 \
	VPXORD Z0, Z0, Z0; \
	VMOVAPS Z0, Z1; VMOVAPS Z0, Z2; VMOVAPS Z0, Z3; \
	VMOVAPS Z0, Z4; VMOVAPS Z0, Z5; VMOVAPS Z0, Z6; VMOVAPS Z0, Z7; \
	VMOVAPS Z0, Z8; VMOVAPS Z0, Z9; VMOVAPS Z0, Z10; VMOVAPS Z0, Z11; \
	VMOVAPS Z0, Z12; VMOVAPS Z0, Z13; VMOVAPS Z0, Z14; VMOVAPS Z0, Z15

// SUM8 folds Z8–Z15 into Z0–Z7 and stores the eight lane sums to s (DX).
#define SUM8 \
	VADDPS Z8, Z0, Z0; VADDPS Z9, Z1, Z1; VADDPS Z10, Z2, Z2; VADDPS Z11, Z3, Z3; \
	VADDPS Z12, Z4, Z4; VADDPS Z13, Z5, Z5; VADDPS Z14, Z6, Z6; VADDPS Z15, Z7, Z7; \
	HSUM(Z0, Y0, X0, 0); HSUM(Z1, Y1, X1, 4); HSUM(Z2, Y2, X2, 8); HSUM(Z3, Y3, X3, 12); \
	HSUM(Z4, Y4, X4, 16); HSUM(Z5, Y5, X5, 20); HSUM(Z6, Y6, X6, 24); HSUM(Z7, Y7, X7, 28)

// PREFETCH8 touches the eight cache lines at R11 and advances it.
#define PREFETCH8 \
	PREFETCHT0 (R11); PREFETCHT0 64(R11); PREFETCHT0 128(R11); PREFETCHT0 192(R11); \
	PREFETCHT0 256(R11); PREFETCHT0 320(R11); PREFETCHT0 384(R11); PREFETCHT0 448(R11); \
	ADDQ $512, R11

// LUT4ROW adds row addr's block of 32 weights times x (Z16 phase 0,
// Z17 phase 1) to acc0 (phase 0) and acc1 (phase 1); table in Z31.
#define LUT4ROW(addr, acc0, acc1, t0, t1) \
	VPMOVZXBD addr, t0; \
	VPSRLD $4, t0, t1; \
	VPERMPS Z31, t0, t0; \
	VPERMPS Z31, t1, t1; \
	VFMADD231PS Z16, t0, acc0; \
	VFMADD231PS Z17, t1, acc1

// func lut4Rows8(tab *[16]float32, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer, pf uintptr, s *[8]float32)
//
// s[k] = Σ tab[code]·x over nb 16-byte blocks of the eight index rows at
// w + k·ld, x in phase layout (P = 2) at xp; pf, advanced 128 bytes per
// block (the next eight rows' share), is prefetched as the rows stream.
TEXT ·lut4Rows8(SB), NOSPLIT, $0-56
	MOVQ tab+0(FP), AX
	MOVQ w+8(FP), SI
	MOVQ ld+16(FP), BX
	MOVQ nb+24(FP), CX
	MOVQ xp+32(FP), DI
	MOVQ pf+40(FP), R11
	MOVQ s+48(FP), DX
	VMOVUPS (AX), Z31
	LEAQ (BX)(BX*2), R8 // 3·ld
	LEAQ (SI)(BX*4), R9 // rows 4–7
	ZERO16
	TESTQ CX, CX
	JLE lut4done

lut4loop:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	PREFETCHT0 (R11)
	PREFETCHT0 64(R11)
	LUT4ROW((SI), Z0, Z8, Z18, Z19)
	LUT4ROW((SI)(BX*1), Z1, Z9, Z20, Z21)
	LUT4ROW((SI)(BX*2), Z2, Z10, Z22, Z23)
	LUT4ROW((SI)(R8*1), Z3, Z11, Z24, Z25)
	LUT4ROW((R9), Z4, Z12, Z18, Z19)
	LUT4ROW((R9)(BX*1), Z5, Z13, Z20, Z21)
	LUT4ROW((R9)(BX*2), Z6, Z14, Z22, Z23)
	LUT4ROW((R9)(R8*1), Z7, Z15, Z24, Z25)
	ADDQ $16, SI
	ADDQ $16, R9
	ADDQ $128, DI
	ADDQ $128, R11
	DECQ CX
	JNZ lut4loop

lut4done:
	SUM8
	VZEROUPPER
	RET

// REDUCE8 leaves in Y0 the eight lane sums of Z0–Z7 plus Z8–Z15 (row k:
// Zk + Zk+8) in row order: the folds, then TREE8 (reduce_amd64.h).
#define REDUCE8 \
	VADDPS Z8, Z0, Z0; VADDPS Z9, Z1, Z1; VADDPS Z10, Z2, Z2; VADDPS Z11, Z3, Z3; \
	VADDPS Z12, Z4, Z4; VADDPS Z13, Z5, Z5; VADDPS Z14, Z6, Z6; VADDPS Z15, Z7, Z7; \
	TREE8

// func lut4Groups(tab *[16]float32, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer, groups int, scale, dst *float32)
//
// lut4Rows8 over groups consecutive groups of eight index rows from w
// (stride ld, nb whole blocks each, one table), each group's eight sums
// multiplied by scale[k] and stored to dst[k] (k counting rows from the
// first), so that a whole matrix is one call. The next group's rows are
// prefetched as each group streams (after the last, lines past it: a
// prefetch never faults).
TEXT ·lut4Groups(SB), NOSPLIT, $0-64
	MOVQ tab+0(FP), AX
	VMOVUPS (AX), Z31
	MOVQ w+8(FP), SI
	MOVQ ld+16(FP), BX
	MOVQ nb+24(FP), R12
	MOVQ xp+32(FP), R13
	MOVQ groups+40(FP), R10
	MOVQ scale+48(FP), R14
	MOVQ dst+56(FP), DX
	LEAQ (BX)(BX*2), R8 // 3·ld
	TESTQ R10, R10
	JLE grpdone

grploop:
	MOVQ SI, AX         // the group's first row
	LEAQ (SI)(BX*8), R11 // the next group: prefetched
	LEAQ (SI)(BX*4), R9 // rows 4–7
	MOVQ R13, DI
	MOVQ R12, CX
	ZERO16
	TESTQ CX, CX
	JLE grpsum

grpblock:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	PREFETCHT0 (R11)
	PREFETCHT0 64(R11)
	LUT4ROW((SI), Z0, Z8, Z18, Z19)
	LUT4ROW((SI)(BX*1), Z1, Z9, Z20, Z21)
	LUT4ROW((SI)(BX*2), Z2, Z10, Z22, Z23)
	LUT4ROW((SI)(R8*1), Z3, Z11, Z24, Z25)
	LUT4ROW((R9), Z4, Z12, Z18, Z19)
	LUT4ROW((R9)(BX*1), Z5, Z13, Z20, Z21)
	LUT4ROW((R9)(BX*2), Z6, Z14, Z22, Z23)
	LUT4ROW((R9)(R8*1), Z7, Z15, Z24, Z25)
	ADDQ $16, SI
	ADDQ $16, R9
	ADDQ $128, DI
	ADDQ $128, R11
	DECQ CX
	JNZ grpblock

grpsum:
	REDUCE8
	VMULPS (R14), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ $32, R14
	ADDQ $32, DX
	LEAQ (AX)(BX*8), SI
	DECQ R10
	JNZ grploop

grpdone:
	VZEROUPPER
	RET

// VPH adds phase sh/4 of the codes in c times x (at xaddr) to acc0
// (component 0, table Z30) and acc1 (component 1, table Z31).
#define VPH(c, xaddr, acc0, acc1, sh) \
	VPSRLD $sh, c, Z25; \
	VMOVUPS xaddr, Z26; \
	VPERMPS Z30, Z25, Z27; \
	VPERMPS Z31, Z25, Z25; \
	VFMADD231PS Z26, Z27, acc0; \
	VFMADD231PS Z26, Z25, acc1

// The 2-vector kernel reads wide blocks: 64 bytes of an index row, 16
// dwords of 8 codes each. Phase p (p < 8) is the dword lanes shifted right
// by 4p: VPERMPS reads only the low 4 bits of each lane, so it picks code
// p of every dword (column 8i + p of the block) with no masking and no
// byte-to-dword expansion (VPMOVZXBD, a shuffle competing with the
// permutes); x is laid out to match (permuteX with P = 8). Measured 10–20%
// faster than 16-byte blocks for 2x16; for LUT4 from DRAM, slower.

// VROW adds the wide block at addr of a 2-vector row times x (wide layout
// at x) to acc0 and acc1.
#define VROW(addr, x, acc0, acc1) \
	VMOVDQU32 addr, Z24; \
	VMOVUPS (x), Z26; \
	VPERMPS Z30, Z24, Z27; \
	VPERMPS Z31, Z24, Z28; \
	VFMADD231PS Z26, Z27, acc0; \
	VFMADD231PS Z26, Z28, acc1; \
	VPH(Z24, 64(x), acc0, acc1, 4); \
	VPH(Z24, 128(x), acc0, acc1, 8); \
	VPH(Z24, 192(x), acc0, acc1, 12); \
	VPH(Z24, 256(x), acc0, acc1, 16); \
	VPH(Z24, 320(x), acc0, acc1, 20); \
	VPH(Z24, 384(x), acc0, acc1, 24); \
	VPH(Z24, 448(x), acc0, acc1, 28)

// func wideVec4(u0, u1 *[16]float32, w unsafe.Pointer, ld, h int, xw unsafe.Pointer, pf uintptr, s *[8]float32)
//
// Four 4-bit 2-vector index rows at w + k·ld, each read as two streams:
// wide blocks [0, h) and [h, 2h) (x at xw and xw + 512·h bytes); s[2k+c]
// is row k, component c. pf advances 512 bytes per block (the next four
// rows' share).
TEXT ·wideVec4(SB), NOSPLIT, $0-64
	MOVQ u0+0(FP), AX
	VMOVUPS (AX), Z30
	MOVQ u1+8(FP), AX
	VMOVUPS (AX), Z31
	MOVQ w+16(FP), SI
	MOVQ ld+24(FP), BX
	MOVQ h+32(FP), CX
	MOVQ xw+40(FP), DI
	MOVQ pf+48(FP), R11
	MOVQ s+56(FP), DX
	LEAQ (BX)(BX*2), R8 // 3·ld
	MOVQ CX, AX
	SHLQ $6, AX
	LEAQ (SI)(AX*1), R9 // stream B of the rows
	SHLQ $3, AX
	LEAQ (DI)(AX*1), R10 // its x
	ZERO16
	TESTQ CX, CX
	JLE vecdone

vecloop:
	PREFETCH8
	VROW((SI), DI, Z0, Z1)
	VROW((R9), R10, Z8, Z9)
	VROW((SI)(BX*1), DI, Z2, Z3)
	VROW((R9)(BX*1), R10, Z10, Z11)
	VROW((SI)(BX*2), DI, Z4, Z5)
	VROW((R9)(BX*2), R10, Z12, Z13)
	VROW((SI)(R8*1), DI, Z6, Z7)
	VROW((R9)(R8*1), R10, Z14, Z15)
	ADDQ $64, SI
	ADDQ $64, R9
	ADDQ $512, DI
	ADDQ $512, R10
	DECQ CX
	JNZ vecloop

vecdone:
	SUM8
	VZEROUPPER
	RET
