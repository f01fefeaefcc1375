//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

// AVX-512 GEMM microkernels (see gemmKernels): panels of 32 outputs, two
// Float32x16 per panel column. The unsafe loads stay in bounds because
// every slice is first re-sliced to what the kernel reads.

var gemmAVX512 = gemmKernels{
	nr: 32,
	// Measured (2 cores, Zen 4): below these T the dot-product kernels,
	// which stream the weights while they compute, are as fast.
	minT:     [3]int{dtF32: 16, dtBF16: 24, dtF16: 24},
	k4:       gemm4x32x16,
	k1:       gemm1x32x16,
	packBF16: packBF16x8,
	packF32:  packF32x8,
	packF16:  packF16,
}

// bcast16 broadcasts the float32 at p+off to 16 lanes.
func bcast16(p unsafe.Pointer, off int) archsimd.Float32x16 {
	return archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(p, off)))
}

// ld16 loads the 16 float32 at p+off.
func ld16(p unsafe.Pointer, off int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, off)))
}

// st16add stores v (plus the 16 float32 already there, with add) at p+off.
func st16add(p unsafe.Pointer, off int, v archsimd.Float32x16, add bool) {
	q := (*[16]float32)(unsafe.Add(p, off))
	if add {
		v = v.Add(archsimd.LoadFloat32x16(q))
	}
	v.Store(q)
}

// gemm4x32x16 is gemmKernels.k4 for nr = 32: four rows of x against a
// 32-wide panel in eight accumulators, enough to keep Zen 4's FMA unit
// busy (it runs at the FMA peak, about 110 GFLOP/s a core, from L2). Go
// keeps vectors that live across a loop in X0–X14 only, and its FMA
// overwrites the multiplicand, so each FMA copies its weight vector first:
// eight accumulators, two weights, a broadcast and a copy fit, more
// accumulators spill (checked with -gcflags=-S).
func gemm4x32x16(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool) {
	_ = x[3*ldx+kc-1]
	_ = p[kc*32-1]
	_ = d[3*ldd+31]
	x0 := unsafe.Pointer(&x[0])
	x1, x2, x3 := unsafe.Add(x0, 4*ldx), unsafe.Add(x0, 8*ldx), unsafe.Add(x0, 12*ldx)
	pw := unsafe.Pointer(&p[0])
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	for j, o := 0, 0; j < 4*kc; j, o = j+4, o+128 {
		w0, w1 := ld16(pw, o), ld16(pw, o+64)
		b := bcast16(x0, j)
		c00, c01 = w0.MulAdd(b, c00), w1.MulAdd(b, c01)
		b = bcast16(x1, j)
		c10, c11 = w0.MulAdd(b, c10), w1.MulAdd(b, c11)
		b = bcast16(x2, j)
		c20, c21 = w0.MulAdd(b, c20), w1.MulAdd(b, c21)
		b = bcast16(x3, j)
		c30, c31 = w0.MulAdd(b, c30), w1.MulAdd(b, c31)
	}
	pd, l := unsafe.Pointer(&d[0]), 4*ldd
	st16add(pd, 0, c00, add)
	st16add(pd, 64, c01, add)
	st16add(pd, l, c10, add)
	st16add(pd, l+64, c11, add)
	st16add(pd, 2*l, c20, add)
	st16add(pd, 2*l+64, c21, add)
	st16add(pd, 3*l, c30, add)
	st16add(pd, 3*l+64, c31, add)
}

// gemm1x32x16 is gemmKernels.k1 for nr = 32: one row of x, the columns
// taken two at a time into separate accumulators so that the FMA chains
// are independent.
func gemm1x32x16(d []float32, x []float32, p []float32, kc int, add bool) {
	x = x[:kc]
	_ = p[kc*32-1]
	d = d[:32]
	px, pw := unsafe.Pointer(&x[0]), unsafe.Pointer(&p[0])
	var c0, c1, e0, e1 archsimd.Float32x16
	j := 0
	for ; j+2 <= kc; j += 2 {
		o := j * 128
		b := bcast16(px, 4*j)
		c0, c1 = ld16(pw, o).MulAdd(b, c0), ld16(pw, o+64).MulAdd(b, c1)
		b = bcast16(px, 4*j+4)
		e0, e1 = ld16(pw, o+128).MulAdd(b, e0), ld16(pw, o+192).MulAdd(b, e1)
	}
	if j < kc {
		o := j * 128
		b := bcast16(px, 4*j)
		c0, c1 = ld16(pw, o).MulAdd(b, c0), ld16(pw, o+64).MulAdd(b, c1)
	}
	pd := unsafe.Pointer(&d[0])
	st16add(pd, 0, c0.Add(e0), add)
	st16add(pd, 64, c1.Add(e1), add)
}
