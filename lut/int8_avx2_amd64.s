//go:build goexperiment.simd

#include "textflag.h"

// T = 1 kernels with int8 activations for CPUs with AVX2 but without
// AVX-512 VNNI/VBMI (int8act.go gives the formula; int8_amd64.s are the
// AVX-512 kernels, int8RowGo the portable twin whose bits both give).
// A step is 64 bytes of an index row (128 4-bit codes) against 128 int8
// values of x in phase layout; a 256-bit register takes half a step: 32
// bytes of codes, lanes 8h … 8h+7 of the 16 int32 lanes (h the half).
//
// AVX2 has no unsigned-by-signed dot product without saturation, so the
// kernels make one operand of VPMADDUBSW (unsigned by signed bytes, adjacent
// pairs added in int16, saturating) small enough. The one-row kernels,
// whose codebooks have |ℓ| ≤ 64 (codebookBound: 7 bits where these kernels
// run), look up ℓ + 64 (≤ 128; the 16 bytes ℓ + 128 of the AVX-512 table
// minus 64, in both 128-bit halves) with VPSHUFB and multiply it by q
// (|q| ≤ 127): pair sums ≤ 2·128·127 = 32,512, and each block's sums
// start from 64·Σq (Int8Input.qh) to make them Σ (ℓ + 128)·q. The
// multi-row ones, which share each lookup between rows of x and take
// 8-bit codebooks too, multiply |ℓ| (VPABSB, once) by q·sgn(ℓ) (VPSIGNB)
// and add 128·Σq (Int8Input.qs): Σ (ℓ + 128)·q either way, as VPDPBUSD
// keeps it. VPMADDWD adds pairs of the int16 sums into int32 lanes of
// four bytes each. The lane sums per block are made once per input; the
// float32 steps then run
// in the portable twin's order: f_l += float32(S_l)·d_(b,l) (a product
// and a sum, no FMA), and at the end the sum16 tree (f_l + f_(l+8), then
// halves, then adjacent pairs). Scalar rows go two at a time for one row
// of x (lut4I8A2), one at a time for four, three or two rows of x
// (lut4I8A2x4, lut4I8A2x3, lut4I8A2x2: verify blocks, batched steps); the
// next 4 KiB of codes are prefetched into L2 as in int8_amd64.s.

#define a2Ahead 4096

// A2LOOKM is A2LOOK with the nibble mask at mask(SP) instead of Y13
// (the four-row kernel needs Y13 for sums).
#define A2LOOKM(off) \
	VMOVDQU off(SI), Y4; \
	VPSRLW $4, Y4, Y5; \
	VPAND a2Mask(SP), Y4, Y4; \
	VPAND a2Mask(SP), Y5, Y5; \
	VPSHUFB Y4, Y12, Y8; \
	VPSHUFB Y5, Y12, Y9; \
	VPABSB Y8, Y10; \
	VPABSB Y9, Y11

// X4STEP adds one step of a scalar row against four rows of x (at R14,
// R14 + R8, R14 + 2·R8, R14 + R15 = R14 + 3·R8) to Y0/Y1, Y2/Y3, Y6/Y7
// and Y13/Y15 (lanes 0–7, 8–15).
#define X4STEP \
	PREFETCHT1 a2Ahead(SI); \
	A2LOOKM(0); \
	A2ROWDOT(0(R14), 64(R14), Y0); \
	A2ROWDOT(0(R14)(R8*1), 64(R14)(R8*1), Y2); \
	A2ROWDOT(0(R14)(R8*2), 64(R14)(R8*2), Y6); \
	A2ROWDOT(0(R14)(R15*1), 64(R14)(R15*1), Y13); \
	A2LOOKM(32); \
	A2ROWDOT(32(R14), 96(R14), Y1); \
	A2ROWDOT(32(R14)(R8*1), 96(R14)(R8*1), Y3); \
	A2ROWDOT(32(R14)(R8*2), 96(R14)(R8*2), Y7); \
	A2ROWDOT(32(R14)(R15*1), 96(R14)(R15*1), Y15); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// a2Mask is where the four-row kernel keeps the nibble mask: past its
// eight 32-byte sets of float32 lanes.
#define a2Mask 256

// A2MASKS sets Y13 to bytes 0x0f, Y14 to int16 ones, and xors Y12 (the
// table as loaded, ℓ + 128) into ℓ.
#define A2MASKS \
	MOVL $0x0f0f0f0f, BX; \
	VMOVQ BX, X13; \
	VPBROADCASTD X13, Y13; \
	MOVL $0x00010001, BX; \
	VMOVQ BX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x80808080, BX; \
	VMOVQ BX, X15; \
	VPBROADCASTD X15, Y15

// A2ARGS loads the kernels' other arguments (rows SI, steps CX, x DI,
// scales R10, lane sums R11, rows R12, sums DX) and jumps to done when
// there are no rows or no steps.
#define A2ARGS(done) \
	MOVQ w+8(FP), SI; \
	MOVQ steps+16(FP), CX; \
	MOVQ xq+24(FP), DI; \
	MOVQ ds+32(FP), R10; \
	MOVQ qs+40(FP), R11; \
	MOVQ rows+48(FP), R12; \
	MOVQ h+56(FP), DX; \
	TESTQ R12, R12; \
	JLE done; \
	TESTQ CX, CX; \
	JLE done

// A2LOOK looks the 32 code bytes at off(SI) up in the table Y12: ℓ of the
// low nibbles to Y8 and of the high ones to Y9, their magnitudes to Y10
// and Y11 (clobbers Y4, Y5).
#define A2LOOK(off) \
	VMOVDQU off(SI), Y4; \
	VPSRLW $4, Y4, Y5; \
	VPAND Y13, Y4, Y4; \
	VPAND Y13, Y5, Y5; \
	VPSHUFB Y4, Y12, Y8; \
	VPSHUFB Y5, Y12, Y9; \
	VPABSB Y8, Y10; \
	VPABSB Y9, Y11

// A2ROWDOT adds Σ ℓ·q of the looked-up half step (Y8–Y11) and the x of
// one row (low nibbles' columns at xlo, high ones' at xhi) into acc
// (clobbers Y4, Y5): q·sgn(ℓ) times |ℓ|.
#define A2ROWDOT(xlo, xhi, acc) \
	VMOVDQU xlo, Y4; \
	VMOVDQU xhi, Y5; \
	VPSIGNB Y8, Y4, Y4; \
	VPSIGNB Y9, Y5, Y5; \
	VPMADDUBSW Y4, Y10, Y4; \
	VPMADDUBSW Y5, Y11, Y5; \
	VPMADDWD Y14, Y4, Y4; \
	VPMADDWD Y14, Y5, Y5; \
	VPADDD Y4, acc, acc; \
	VPADDD Y5, acc, acc

// X3STEP adds one step of a scalar row against three rows of x (at R14,
// R14 + R8, R14 + 2·R8) to Y0/Y1, Y2/Y3 and Y6/Y7 (lanes 0–7, 8–15).
#define X3STEP \
	PREFETCHT1 a2Ahead(SI); \
	A2LOOK(0); \
	A2ROWDOT(0(R14), 64(R14), Y0); \
	A2ROWDOT(0(R14)(R8*1), 64(R14)(R8*1), Y2); \
	A2ROWDOT(0(R14)(R8*2), 64(R14)(R8*2), Y6); \
	A2LOOK(32); \
	A2ROWDOT(32(R14), 96(R14), Y1); \
	A2ROWDOT(32(R14)(R8*1), 96(R14)(R8*1), Y3); \
	A2ROWDOT(32(R14)(R8*2), 96(R14)(R8*2), Y7); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// A2FOLDM adds a block's int32 lanes acc plus 128·Σq (at qmem) times the
// scales (at dmem) to the float32 lanes at foff(SP).
#define A2FOLDM(acc, qmem, dmem, foff) \
	VPADDD qmem, acc, acc; \
	VCVTDQ2PS acc, acc; \
	VMULPS dmem, acc, acc; \
	VADDPS foff(SP), acc, acc; \
	VMOVUPS acc, foff(SP)

// A2SUM16M sums the 16 float32 lanes at foff(SP) and foff8(SP) in sum16's
// order and stores the sum to mem.
#define A2SUM16M(foff, foff8, mem) \
	VMOVUPS foff(SP), Y8; \
	VADDPS foff8(SP), Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS X9, X8, X8; \
	VPERMILPS $0xb1, X8, X9; \
	VADDPS X9, X8, X8; \
	VMOVHLPS X8, X8, X9; \
	VADDSS X9, X8, X8; \
	VMOVSS X8, mem

// PAIRSUM16 sums two sets of 16 float32 lanes, Y6/Y7 and Y10/Y11, each
// in sum16's order (f_l + f_(l+8), then halves, then adjacent pairs, then
// the pair sums), two to a register, and stores the first to (DX) and
// the second to second (clobbers Y6, Y8–Y10).
#define PAIRSUM16(second) \
	VADDPS Y7, Y6, Y6; \
	VADDPS Y11, Y10, Y10; \
	VPERM2F128 $0x20, Y10, Y6, Y8; \
	VPERM2F128 $0x31, Y10, Y6, Y9; \
	VADDPS Y9, Y8, Y8; \
	VPERMILPS $0xb1, Y8, Y9; \
	VADDPS Y9, Y8, Y8; \
	VPERMILPS $0x4e, Y8, Y9; \
	VADDPS Y9, Y8, Y8; \
	VMOVSS X8, (DX); \
	VEXTRACTF128 $1, Y8, X9; \
	VMOVSS X9, second

// A2CODESA loads 32 bytes of codes at off(SI) and splits them into low
// nibbles (Y4) and high nibbles (Y5).
#define A2CODESA(off) \
	VMOVDQU off(SI), Y4; \
	VPSRLW $4, Y4, Y5; \
	VPAND Y13, Y4, Y4; \
	VPAND Y13, Y5, Y5

// A2CODESB is A2CODESA for the row after SI's (R12 bytes on).
#define A2CODESB(off) \
	VMOVDQU off(SI)(R12*1), Y4; \
	VPSRLW $4, Y4, Y5; \
	VPAND Y13, Y4, Y4; \
	VPAND Y13, Y5, Y5

// A2DOTU adds Σ (ℓ + 64)·q of the nibbles in src, looked up in tab (the
// bytes ℓ + 64 ∈ [0, 128]: 7-bit codebooks, |ℓ| ≤ 64, see
// codebookBound), and the x at off(R14) into acc: ℓ + 64 is VPMADDUBSW's
// unsigned operand and q its signed one, pair sums ≤ 2·128·127 = 32,512
// (clobbers Y8).
#define A2DOTU(off, src, tab, acc) \
	VPSHUFB src, tab, Y8; \
	VPMADDUBSW off(R14), Y8, Y8; \
	VPMADDWD Y14, Y8, Y8; \
	VPADDD Y8, acc, acc

// A2FOLDH adds a block's int32 lanes acc times the scales at qoff(R13)
// to the float32 lanes f, for the one-row kernels: A2DOTU's sums, which
// started from the lane sums 64·Σq (A2START) and so are Σ (ℓ + 128)·q,
// the lane sums the other kernels fold.
#define A2FOLDH(acc, qoff, f) \
	VCVTDQ2PS acc, acc; \
	VMULPS qoff(R13), acc, acc; \
	VADDPS acc, f, f

// A2START sets a block's int32 lanes a and b (lanes 0–7, 8–15) to the
// lane sums 64·Σq at (R9), and c and d to copies of them.
#define A2START(a, b, c, d) \
	VMOVDQU (R9), a; \
	VMOVDQU 32(R9), b; \
	VMOVDQA a, c; \
	VMOVDQA b, d

// PA2STEPU adds one step of two scalar rows, SI's to Y0/Y1 and the one
// R12 bytes on to Y2/Y3, as A2DOTU's sums (the table Y12 holds ℓ + 64):
// two chains of the same work, so that the CPU overlaps one row's sums
// and reduction with the other's.
#define PA2STEPU \
	PREFETCHT1 a2Ahead(SI); \
	PREFETCHT1 a2Ahead(SI)(R12*1); \
	A2CODESA(0); \
	A2DOTU(0, Y4, Y12, Y0); \
	A2DOTU(64, Y5, Y12, Y0); \
	A2CODESB(0); \
	A2DOTU(0, Y4, Y12, Y2); \
	A2DOTU(64, Y5, Y12, Y2); \
	A2CODESA(32); \
	A2DOTU(32, Y4, Y12, Y1); \
	A2DOTU(96, Y5, Y12, Y1); \
	A2CODESB(32); \
	A2DOTU(32, Y4, Y12, Y3); \
	A2DOTU(96, Y5, Y12, Y3); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// SA2STEPU adds one step of a scalar row to Y0/Y1 (lanes 0–7, 8–15), as
// A2DOTU's sums.
#define SA2STEPU \
	PREFETCHT1 a2Ahead(SI); \
	A2CODESA(0); \
	A2DOTU(0, Y4, Y12, Y0); \
	A2DOTU(64, Y5, Y12, Y0); \
	A2CODESA(32); \
	A2DOTU(32, Y4, Y12, Y1); \
	A2DOTU(96, Y5, Y12, Y1); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// func lut4I8A2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qh *int32, rows int, h *float32)
//
// For rows consecutive index rows from w (each 64·steps bytes, one
// table of |ℓ| ≤ 64), h[k] = Σ d·S of row k (int8act.go's int8RowGo,
// bit for bit). Rows go in pairs, k and k + ⌊rows/2⌋ (float32 lanes in
// Y6/Y7 and Y10/Y11, summed together: sum16's order, two rows to a
// register), so that each pair reads two rows that are each a forward
// stream through memory (rows next to each other, read in turns, read
// DRAM a third slower); then a last odd row alone (lanes in Y2/Y3).
// R12 and R15 are the bytes from a pair's first row to its second and
// from its first sum to its second; rows+48(FP) counts the pairs left.
TEXT ·lut4I8A2(SB), NOSPLIT, $8-64
	A2MASKS
	MOVL $0x40404040, BX
	VMOVQ BX, X15
	VPBROADCASTD X15, Y15
	MOVQ tab+0(FP), AX
	VMOVDQU (AX), Y12
	VPSUBB Y15, Y12, Y12
	MOVQ w+8(FP), SI
	MOVQ steps+16(FP), CX
	MOVQ xq+24(FP), DI
	MOVQ ds+32(FP), R10
	MOVQ qh+40(FP), R11
	MOVQ h+56(FP), DX
	TESTQ CX, CX
	JLE sdone
	MOVQ rows+48(FP), AX
	SHRQ $1, AX // pairs
	MOVQ AX, R15
	SHLQ $2, R15 // bytes from a pair's first sum to its second
	MOVQ CX, R12
	SHLQ $6, R12
	IMULQ AX, R12 // bytes from a pair's first row to its second
	MOVQ AX, pairs-8(SP)

ppair:
	CMPQ pairs-8(SP), $0
	JEQ plast
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

pblock:
	A2START(Y0, Y1, Y2, Y3)
	PA2STEPU
	DECQ AX
	JZ pfold
	PA2STEPU
	DECQ AX
	JZ pfold
	PA2STEPU
	DECQ AX
	JZ pfold
	PA2STEPU
	DECQ AX

pfold:
	A2FOLDH(Y0, 0, Y6)
	A2FOLDH(Y1, 32, Y7)
	A2FOLDH(Y2, 0, Y10)
	A2FOLDH(Y3, 32, Y11)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ pblock
	PAIRSUM16((DX)(R15*1))
	ADDQ $4, DX
	DECQ pairs-8(SP)
	JMP ppair

plast: // past the pairs' second rows and sums
	ADDQ R12, SI
	ADDQ R15, DX
	MOVQ rows+48(FP), R12
	ANDQ $1, R12
	JZ sdone
	JMP srow

srow:
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

sblock:
	VMOVDQU (R9), Y0
	VMOVDQU 32(R9), Y1
	SA2STEPU
	DECQ AX
	JZ sfold
	SA2STEPU
	DECQ AX
	JZ sfold
	SA2STEPU
	DECQ AX
	JZ sfold
	SA2STEPU
	DECQ AX

sfold:
	A2FOLDH(Y0, 0, Y2)
	A2FOLDH(Y1, 32, Y3)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ sblock
	VADDPS Y3, Y2, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VPERMILPS $0xb1, X8, X9
	VADDPS X9, X8, X8
	VMOVHLPS X8, X8, X9
	VADDSS X9, X8, X8
	VMOVSS X8, (DX)
	ADDQ $4, DX
	DECQ R12
	JNZ srow

sdone:
	VZEROUPPER
	RET

// VA2STEP adds one step of a 2-vector row: component 0 (table Y12) to
// Y0/Y1, component 1 (table Y3) to Y2/Y15, as A2DOTU's sums.
#define VA2STEP \
	PREFETCHT1 a2Ahead(SI); \
	A2CODESA(0); \
	A2DOTU(0, Y4, Y12, Y0); \
	A2DOTU(64, Y5, Y12, Y0); \
	A2DOTU(0, Y4, Y3, Y2); \
	A2DOTU(64, Y5, Y3, Y2); \
	A2CODESA(32); \
	A2DOTU(32, Y4, Y12, Y1); \
	A2DOTU(96, Y5, Y12, Y1); \
	A2DOTU(32, Y4, Y3, Y15); \
	A2DOTU(96, Y5, Y3, Y15); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// func vec2I8A2(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qh *int32, rows int, h *float32)
//
// lut4I8A2 for 2-vector 2x16 rows: h[2k+c] of index row k, component c
// (tables tab[0:64] and tab[64:128], ℓ + 128, made ℓ + 64 here). The two
// components' float32 lanes stay in Y6/Y7 and Y10/Y11 and are summed
// together, as lut4I8A2 sums a pair of rows. Per 32 bytes of codes: the
// split (three instructions) and four lookups and products of four
// instructions each.
TEXT ·vec2I8A2(SB), NOSPLIT, $0-64
	A2MASKS
	MOVL $0x40404040, BX
	VMOVQ BX, X15
	VPBROADCASTD X15, Y15
	MOVQ tab+0(FP), AX
	VMOVDQU (AX), Y12
	VPSUBB Y15, Y12, Y12
	VMOVDQU 64(AX), Y3
	VPSUBB Y15, Y3, Y3
	MOVQ w+8(FP), SI
	MOVQ steps+16(FP), CX
	MOVQ xq+24(FP), DI
	MOVQ ds+32(FP), R10
	MOVQ qh+40(FP), R11
	MOVQ rows+48(FP), R12
	MOVQ h+56(FP), DX
	TESTQ R12, R12
	JLE wdone
	TESTQ CX, CX
	JLE wdone

wrow:
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

wblock:
	A2START(Y0, Y1, Y2, Y15)
	VA2STEP
	DECQ AX
	JZ wfold
	VA2STEP
	DECQ AX
	JZ wfold
	VA2STEP
	DECQ AX
	JZ wfold
	VA2STEP
	DECQ AX

wfold:
	A2FOLDH(Y0, 0, Y6)
	A2FOLDH(Y1, 32, Y7)
	A2FOLDH(Y2, 0, Y10)
	A2FOLDH(Y15, 32, Y11)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ wblock
	PAIRSUM16(4(DX))
	ADDQ $8, DX
	DECQ R12
	JNZ wrow

wdone:
	VZEROUPPER
	RET

// func lut4I8A2x3(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)
//
// lut4I8A2 for three rows of x at once, each looked-up step of codes
// meeting all three: x row t at xq + t·xstride, its scales and lane sums
// at ds and qs + t·dstride, its sums at h + t·hstride (bytes). Each row's
// sums are lut4I8A2's bits: the same integer sums, folded and summed in
// the same order.
TEXT ·lut4I8A2x3(SB), NOSPLIT, $192-88
	A2MASKS
	MOVQ tab+0(FP), AX
	VMOVDQU (AX), Y12
	VPXOR Y15, Y12, Y12
	A2ARGS(xdone)
	MOVQ xstride+64(FP), R8

xrow:
	MOVQ dstride+72(FP), BX
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y8, Y8, Y8
	VMOVUPS Y8, 0(SP)
	VMOVUPS Y8, 32(SP)
	VMOVUPS Y8, 64(SP)
	VMOVUPS Y8, 96(SP)
	VMOVUPS Y8, 128(SP)
	VMOVUPS Y8, 160(SP)

xblock:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	X3STEP
	DECQ AX
	JZ xfold
	X3STEP
	DECQ AX
	JZ xfold
	X3STEP
	DECQ AX
	JZ xfold
	X3STEP
	DECQ AX

xfold:
	A2FOLDM(Y0, 0(R9), 0(R13), 0)
	A2FOLDM(Y1, 32(R9), 32(R13), 32)
	A2FOLDM(Y2, 0(R9)(BX*1), 0(R13)(BX*1), 64)
	A2FOLDM(Y3, 32(R9)(BX*1), 32(R13)(BX*1), 96)
	A2FOLDM(Y6, 0(R9)(BX*2), 0(R13)(BX*2), 128)
	A2FOLDM(Y7, 32(R9)(BX*2), 32(R13)(BX*2), 160)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ xblock
	MOVQ hstride+80(FP), BX
	A2SUM16M(0, 32, (DX))
	A2SUM16M(64, 96, (DX)(BX*1))
	A2SUM16M(128, 160, (DX)(BX*2))
	ADDQ $4, DX
	DECQ R12
	JNZ xrow

xdone:
	VZEROUPPER
	RET

// func lut4I8A2x4(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)
//
// lut4I8A2x3 for four rows of x: each looked-up step of codes meets all
// four (the nibble mask moves to the frame to free Y13), so a verify
// block of eight rows reads the weights twice, not three times. Each
// row's sums are lut4I8A2's bits.
TEXT ·lut4I8A2x4(SB), NOSPLIT, $288-88
	A2MASKS
	VMOVDQU Y13, a2Mask(SP)
	MOVQ tab+0(FP), AX
	VMOVDQU (AX), Y12
	VPXOR Y15, Y12, Y12
	A2ARGS(zdone)
	MOVQ xstride+64(FP), R8

zrow:
	MOVQ dstride+72(FP), BX
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y8, Y8, Y8
	VMOVUPS Y8, 0(SP)
	VMOVUPS Y8, 32(SP)
	VMOVUPS Y8, 64(SP)
	VMOVUPS Y8, 96(SP)
	VMOVUPS Y8, 128(SP)
	VMOVUPS Y8, 160(SP)
	VMOVUPS Y8, 192(SP)
	VMOVUPS Y8, 224(SP)

zblock:
	LEAQ (R8)(R8*2), R15 // x row 3
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y13, Y13, Y13
	VPXOR Y15, Y15, Y15
	X4STEP
	DECQ AX
	JZ zfold
	X4STEP
	DECQ AX
	JZ zfold
	X4STEP
	DECQ AX
	JZ zfold
	X4STEP
	DECQ AX

zfold:
	LEAQ (BX)(BX*2), R15 // scales and lane sums of x row 3
	A2FOLDM(Y0, 0(R9), 0(R13), 0)
	A2FOLDM(Y1, 32(R9), 32(R13), 32)
	A2FOLDM(Y2, 0(R9)(BX*1), 0(R13)(BX*1), 64)
	A2FOLDM(Y3, 32(R9)(BX*1), 32(R13)(BX*1), 96)
	A2FOLDM(Y6, 0(R9)(BX*2), 0(R13)(BX*2), 128)
	A2FOLDM(Y7, 32(R9)(BX*2), 32(R13)(BX*2), 160)
	A2FOLDM(Y13, 0(R9)(R15*1), 0(R13)(R15*1), 192)
	A2FOLDM(Y15, 32(R9)(R15*1), 32(R13)(R15*1), 224)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ zblock
	MOVQ hstride+80(FP), BX
	LEAQ (BX)(BX*2), R15
	A2SUM16M(0, 32, (DX))
	A2SUM16M(64, 96, (DX)(BX*1))
	A2SUM16M(128, 160, (DX)(BX*2))
	A2SUM16M(192, 224, (DX)(R15*1))
	ADDQ $4, DX
	DECQ R12
	JNZ zrow

zdone:
	VZEROUPPER
	RET

// X2STEP is X3STEP for two rows of x (Y0/Y1, Y2/Y3).
#define X2STEP \
	PREFETCHT1 a2Ahead(SI); \
	A2LOOK(0); \
	A2ROWDOT(0(R14), 64(R14), Y0); \
	A2ROWDOT(0(R14)(R8*1), 64(R14)(R8*1), Y2); \
	A2LOOK(32); \
	A2ROWDOT(32(R14), 96(R14), Y1); \
	A2ROWDOT(32(R14)(R8*1), 96(R14)(R8*1), Y3); \
	ADDQ $64, SI; \
	ADDQ $128, R14

// func lut4I8A2x2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)
//
// lut4I8A2x3 for two rows of x.
TEXT ·lut4I8A2x2(SB), NOSPLIT, $128-88
	A2MASKS
	MOVQ tab+0(FP), AX
	VMOVDQU (AX), Y12
	VPXOR Y15, Y12, Y12
	A2ARGS(ydone)
	MOVQ xstride+64(FP), R8

yrow:
	MOVQ dstride+72(FP), BX
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ R11, R9
	MOVQ CX, AX
	VXORPS Y8, Y8, Y8
	VMOVUPS Y8, 0(SP)
	VMOVUPS Y8, 32(SP)
	VMOVUPS Y8, 64(SP)
	VMOVUPS Y8, 96(SP)

yblock:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	X2STEP
	DECQ AX
	JZ yfold
	X2STEP
	DECQ AX
	JZ yfold
	X2STEP
	DECQ AX
	JZ yfold
	X2STEP
	DECQ AX

yfold:
	A2FOLDM(Y0, 0(R9), 0(R13), 0)
	A2FOLDM(Y1, 32(R9), 32(R13), 32)
	A2FOLDM(Y2, 0(R9)(BX*1), 0(R13)(BX*1), 64)
	A2FOLDM(Y3, 32(R9)(BX*1), 32(R13)(BX*1), 96)
	ADDQ $64, R13
	ADDQ $64, R9
	TESTQ AX, AX
	JNZ yblock
	MOVQ hstride+80(FP), BX
	A2SUM16M(0, 32, (DX))
	A2SUM16M(64, 96, (DX)(BX*1))
	ADDQ $4, DX
	DECQ R12
	JNZ yrow

ydone:
	VZEROUPPER
	RET
