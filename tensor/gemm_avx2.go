//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

// AVX2+FMA GEMM microkernels (see gemmKernels): panels of 16 outputs, two
// Float32x8 per panel column; otherwise as the AVX-512 kernels.

var gemmAVX2 = gemmKernels{
	nr: 16,
	// With the assembly 4×16 tile the GEMM path beats the dot-product
	// kernels from T = 16 (BenchmarkDenseMulPath on an AMD EPYC, Zen 3:
	// f32 70–74 against 48–54 GFLOP/s, bf16 60–90 against 37–52; at T = 8
	// the two are within noise). The archsimd tile it replaced ran at
	// about half the FMA peak and needed T = 64.
	minT:     [3]int{16, 16, 16},
	k4:       gemm4x16x8,
	k1:       gemm1x16x8,
	packBF16: packBF16x8,
	packF32:  packF32x8,
	packF16:  packF16,
}

// bcast8 broadcasts the float32 at p+off to 8 lanes.
func bcast8(p unsafe.Pointer, off int) archsimd.Float32x8 {
	return archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(p, off)))
}

// ld8 loads the 8 float32 at p+off.
func ld8(p unsafe.Pointer, off int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

// st8add stores v (plus the 8 float32 already there, with add) at p+off.
func st8add(p unsafe.Pointer, off int, v archsimd.Float32x8, add bool) {
	q := (*[8]float32)(unsafe.Add(p, off))
	if add {
		v = v.Add(archsimd.LoadFloat32x8(q))
	}
	v.Store(q)
}

// gemm4x16x8 is gemmKernels.k4 for nr = 16: four rows of x against a
// 16-wide panel in eight accumulators, by gemm4x16avx2
// (gemm_avx2_amd64.s; gemm4x16x8Go with useGemmAsm off).
func gemm4x16x8(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool) {
	if !useGemmAsm {
		gemm4x16x8Go(d, ldd, x, ldx, p, kc, add)
		return
	}
	_ = x[3*ldx+max(kc, 1)-1]
	_ = p[max(kc, 1)*16-1]
	_ = d[3*ldd+15]
	gemm4x16avx2(&d[0], ldd, &x[0], ldx, &p[0], kc, add)
}

// useGemmAsm switches gemm4x16avx2 off for its twin test.
var useGemmAsm = true

//go:noescape
func gemm4x16avx2(d *float32, ldd int, x *float32, ldx int, p *float32, kc int, add bool)

// gemm4x16x8Go is gemm4x16avx2's Go twin: the same fused multiply-adds
// in the same order.
func gemm4x16x8Go(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool) {
	_ = x[3*ldx+kc-1]
	_ = p[kc*16-1]
	_ = d[3*ldd+15]
	x0 := unsafe.Pointer(&x[0])
	x1, x2, x3 := unsafe.Add(x0, 4*ldx), unsafe.Add(x0, 8*ldx), unsafe.Add(x0, 12*ldx)
	pw := unsafe.Pointer(&p[0])
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	for j, o := 0, 0; j < 4*kc; j, o = j+4, o+64 {
		w0, w1 := ld8(pw, o), ld8(pw, o+32)
		b := bcast8(x0, j)
		c00, c01 = w0.MulAdd(b, c00), w1.MulAdd(b, c01)
		b = bcast8(x1, j)
		c10, c11 = w0.MulAdd(b, c10), w1.MulAdd(b, c11)
		b = bcast8(x2, j)
		c20, c21 = w0.MulAdd(b, c20), w1.MulAdd(b, c21)
		b = bcast8(x3, j)
		c30, c31 = w0.MulAdd(b, c30), w1.MulAdd(b, c31)
	}
	pd, l := unsafe.Pointer(&d[0]), 4*ldd
	st8add(pd, 0, c00, add)
	st8add(pd, 32, c01, add)
	st8add(pd, l, c10, add)
	st8add(pd, l+32, c11, add)
	st8add(pd, 2*l, c20, add)
	st8add(pd, 2*l+32, c21, add)
	st8add(pd, 3*l, c30, add)
	st8add(pd, 3*l+32, c31, add)
}

// gemm1x16x8 is gemmKernels.k1 for nr = 16: one row of x, the columns
// taken two at a time into separate accumulators so that the FMA chains
// are independent.
func gemm1x16x8(d []float32, x []float32, p []float32, kc int, add bool) {
	x = x[:kc]
	_ = p[kc*16-1]
	d = d[:16]
	px, pw := unsafe.Pointer(&x[0]), unsafe.Pointer(&p[0])
	var c0, c1, e0, e1 archsimd.Float32x8
	j := 0
	for ; j+2 <= kc; j += 2 {
		o := j * 64
		b := bcast8(px, 4*j)
		c0, c1 = ld8(pw, o).MulAdd(b, c0), ld8(pw, o+32).MulAdd(b, c1)
		b = bcast8(px, 4*j+4)
		e0, e1 = ld8(pw, o+64).MulAdd(b, e0), ld8(pw, o+96).MulAdd(b, e1)
	}
	if j < kc {
		o := j * 64
		b := bcast8(px, 4*j)
		c0, c1 = ld8(pw, o).MulAdd(b, c0), ld8(pw, o+32).MulAdd(b, c1)
	}
	pd := unsafe.Pointer(&d[0])
	st8add(pd, 0, c0.Add(e0), add)
	st8add(pd, 32, c1.Add(e1), add)
}
