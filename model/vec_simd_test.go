//go:build goexperiment.simd && amd64

package model

import (
	"math"
	"simd/archsimd"
	"testing"

	"forge/tensor"
)

// TestExp32x16 checks that the vector exp32 gives exp32's bits for every
// float32 at a stride over the whole range (both signs, NaNs and
// infinities included), for the special inputs of vecInputs, and around
// the ends of the direct 2ᵏ scaling and the cut-offs (checkExpLanes).
func TestExp32x16(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	var x, got [16]float32
	checkExpLanes(t, "exp32x16", x[:], got[:], func() { exp32x16(archsimd.LoadFloat32x16(&x)).Store(&got) })
}

// TestExp32x8 is TestExp32x16 for the AVX2 twin.
func TestExp32x8(t *testing.T) {
	if !vec2Ready {
		t.Skip("the AVX2 kernels run only on CPUs with AVX2 and without AVX-512")
	}
	var x, got [8]float32
	var c expK
	c.init()
	checkExpLanes(t, "exp32x8", x[:], got[:], func() {
		exp32x8(archsimd.LoadFloat32x8(&x), &c).Store(&got)
		archsimd.ClearAVXUpperBits()
	})
}

// checkExpLanes fills x with batches of inputs, calls run (got = the
// vector exp of x) and compares every lane with exp32, bit for bit.
func checkExpLanes(t *testing.T, name string, x, got []float32, run func()) {
	t.Helper()
	check := func() {
		run()
		for i, v := range got {
			if w := exp32(x[i]); !sameBits(v, w) {
				t.Fatalf("%s(%v) = %v (%#x), exp32 %v (%#x)", name, x[i], v, math.Float32bits(v), w, math.Float32bits(w))
			}
		}
	}
	step := uint64(1) << 10
	if testing.Short() {
		step = 1 << 14
	}
	for b, i := uint64(0), 0; b < 1<<32; b += step - 3 {
		x[i] = math.Float32frombits(uint32(b))
		if i++; i == len(x) {
			check()
			i = 0
		}
	}
	copy(x, vecInputs(len(x), 9))
	check()
	// Around the ends of the direct scaling (k = −125 and 127) and the
	// subnormal and overflow cut-offs.
	for _, c := range []float32{-86.64, -87.33654, -88.0, -103.97, 87.9, 88.72, 88.72284} {
		for i := range x {
			x[i] = math.Nextafter32(c, 0) - float32(i)*1e-5
		}
		check()
	}
}

// TestLdF16 checks the vector fp16 widening against tensor.F16ToF32 on
// every finite fp16 value (normal, subnormal, both zeros).
func TestLdF16(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	var h [16]uint16
	var got [16]float32
	for base := 0; base < 1<<16; base += 16 {
		for i := range h {
			h[i] = uint16(base + i)
		}
		ldF16(h[:]).Store(&got)
		for i, v := range got {
			if h[i]&0x7c00 == 0x7c00 {
				continue // Inf and NaN: the cache holds finite keys
			}
			if w := tensor.F16ToF32(h[i]); !sameBits(v, w) {
				t.Fatalf("ldF16(%#04x) = %v, F16ToF32 %v", h[i], v, w)
			}
		}
	}
}
