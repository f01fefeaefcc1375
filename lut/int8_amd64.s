//go:build goexperiment.simd

#include "textflag.h"
#include "reduce_amd64.h"

// T = 1 kernels with int8 activations (int8act.go gives the formula,
// int8act_simd.go the drivers). A step is 64 bytes of an index row (128
// 4-bit codes) against 128 int8 values of x in phase layout: the first
// 64 are the columns of the low nibbles, the next 64 those of the high
// nibbles.
// VPERMB looks 64 codes up at once in a 64-byte table (16 entries of
// ℓ + 128, repeated: it reads six index bits, so the low nibble needs no
// mask, nor the high one after a 16-bit shift); VPDPBUSD multiplies the
// unsigned looked-up bytes by the signed x bytes and adds each four
// products into one of 16 int32 lanes. Per block of four steps the lanes
// are converted, multiplied by their 16 scales d_(b,l) and added to
// float32 lanes; the tree of reduce_amd64.h sums eight rows' lanes and
// stores their results. Rows are read one after another, so that each
// core reads one sequential stream (on a Xeon that streamed faster than
// eight interleaved rows with L1 prefetches of the next eight), and the
// kernels prefetch int8Ahead bytes ahead with PREFETCHNTA: the weights
// are read once a token, so they need not displace anything from L2 or
// L3. With the arithmetic this cheap the kernels wait on memory: on a
// Zen 5 EPYC, decode of the synth-1.4b read 12% faster with NTA 8192
// ahead than with PREFETCHT1 4096 ahead (BENCHMARKS.md, issue 12).

// int8Ahead is the prefetch distance in bytes.
#define int8Ahead 8192

// FOLD adds the int32 lanes of acc times the block's scales (Z27) to the
// float32 lanes of f: f + float32(acc)·d, rounded after the product and
// the sum.
#define FOLD(acc, f) \
	VCVTDQ2PS acc, acc; \
	VMULPS Z27, acc, acc; \
	VADDPS acc, f, f

// GROUPSUM stores to DX (and advances it) the sums of the eight rows'
// float32 lanes staged in the frame.
#define GROUPSUM \
	VMOVUPS 0(SP), Z0; \
	VMOVUPS 64(SP), Z1; \
	VMOVUPS 128(SP), Z2; \
	VMOVUPS 192(SP), Z3; \
	VMOVUPS 256(SP), Z4; \
	VMOVUPS 320(SP), Z5; \
	VMOVUPS 384(SP), Z6; \
	VMOVUPS 448(SP), Z7; \
	TREE8; \
	VMOVUPS Y0, (DX); \
	ADDQ $32, DX

// SSTEP adds one step of the scalar row at SI to the int32 lanes Z8 (low
// nibbles) and Z9 (high nibbles: two accumulators, so that consecutive
// VPDPBUSDs do not wait on each other), x at R14, and prefetches the line
// int8Ahead bytes further on.
#define SSTEP \
	VMOVDQU64 (SI), Z18; \
	PREFETCHNTA int8Ahead(SI); \
	VPSRLW $4, Z18, Z19; \
	VPERMB Z26, Z18, Z18; \
	VPERMB Z26, Z19, Z19; \
	VPDPBUSD (R14), Z18, Z8; \
	VPDPBUSD 64(R14), Z19, Z9; \
	ADDQ $64, SI; \
	ADDQ $128, R14

// I8ARGS loads the kernels' other arguments (rows SI, steps CX, x DI,
// scales R10, groups R12, sums DX) and jumps to done when there are no
// groups or no steps.
#define I8ARGS(done) \
	MOVQ w+8(FP), SI; \
	MOVQ steps+16(FP), CX; \
	MOVQ xq+24(FP), DI; \
	MOVQ ds+32(FP), R10; \
	MOVQ groups+40(FP), R12; \
	MOVQ h+48(FP), DX; \
	TESTQ R12, R12; \
	JLE done; \
	TESTQ CX, CX; \
	JLE done

// func lut4I8(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, groups int, h *float32)
//
// For groups consecutive groups of eight index rows from w (each 64·steps
// bytes, one table), h[k] = Σ d·S of row k (int8act.go's int8RowGo, bit
// for bit). A row's float32 lanes go to the frame; the group's eight are
// summed by TREE8 and stored together.
TEXT ·lut4I8(SB), NOSPLIT, $512-56
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	I8ARGS(sdone)

sgroup:
	XORQ R9, R9

srow:
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ CX, AX
	VPXORD Z0, Z0, Z0

sblock:
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	SSTEP
	DECQ AX
	JZ sfold
	SSTEP
	DECQ AX
	JZ sfold
	SSTEP
	DECQ AX
	JZ sfold
	SSTEP
	DECQ AX

sfold:
	VPADDD Z9, Z8, Z8
	VMOVUPS (R13), Z27
	ADDQ $64, R13
	FOLD(Z8, Z0)
	TESTQ AX, AX
	JNZ sblock
	VMOVUPS Z0, (SP)(R9*1)
	ADDQ $64, R9
	CMPQ R9, $512
	JLT srow
	GROUPSUM
	DECQ R12
	JNZ sgroup

sdone:
	VZEROUPPER
	RET

// VSTEP is SSTEP for a 2-vector index row: component 0 (table Z26) into
// Z8/Z9, component 1 (table Z30) into Z10/Z11.
#define VSTEP \
	VMOVDQU64 (SI), Z18; \
	PREFETCHNTA int8Ahead(SI); \
	VPSRLW $4, Z18, Z19; \
	VPERMB Z26, Z18, Z20; \
	VPERMB Z30, Z18, Z21; \
	VPERMB Z26, Z19, Z22; \
	VPERMB Z30, Z19, Z23; \
	VMOVDQU64 (R14), Z16; \
	VMOVDQU64 64(R14), Z17; \
	VPDPBUSD Z16, Z20, Z8; \
	VPDPBUSD Z17, Z22, Z9; \
	VPDPBUSD Z16, Z21, Z10; \
	VPDPBUSD Z17, Z23, Z11; \
	ADDQ $64, SI; \
	ADDQ $128, R14

// func vec2I8(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, groups int, h *float32)
//
// lut4I8 for 2-vector 2x16: groups of four index rows (eight outputs,
// h[2k+c] of index row k, component c; tables tab[0:64] and tab[64:128]).
TEXT ·vec2I8(SB), NOSPLIT, $512-56
	MOVQ tab+0(FP), AX
	VMOVDQU64 (AX), Z26
	VMOVDQU64 64(AX), Z30
	I8ARGS(wdone)

wgroup:
	XORQ R9, R9

wrow:
	MOVQ DI, R14
	MOVQ R10, R13
	MOVQ CX, AX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

wblock:
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VSTEP
	DECQ AX
	JZ wfold
	VSTEP
	DECQ AX
	JZ wfold
	VSTEP
	DECQ AX
	JZ wfold
	VSTEP
	DECQ AX

wfold:
	VPADDD Z9, Z8, Z8
	VPADDD Z11, Z10, Z10
	VMOVUPS (R13), Z27
	ADDQ $64, R13
	FOLD(Z8, Z0)
	FOLD(Z10, Z1)
	TESTQ AX, AX
	JNZ wblock
	VMOVUPS Z0, (SP)(R9*1)
	VMOVUPS Z1, 64(SP)(R9*1)
	ADDQ $128, R9
	CMPQ R9, $512
	JLT wrow
	GROUPSUM
	DECQ R12
	JNZ wgroup

wdone:
	VZEROUPPER
	RET
