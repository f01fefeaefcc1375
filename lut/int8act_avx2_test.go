//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"testing"
)

// TestInt8AVX2Kernels runs the int8 twin tests with the AVX2 kernels and
// quantizer forced (the AVX-512 ones switched off), so that a CPU with
// AVX-512, where they would never run, tests them too.
func TestInt8AVX2Kernels(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	f, r, a := fastReady, int8Ready, int8A2
	fastReady, int8Ready, int8A2 = false, false, true
	defer func() { fastReady, int8Ready, int8A2 = f, r, a }()
	t.Run("MatchTwin", TestInt8KernelsMatchTwin)
	t.Run("QuantizeTwin", TestInt8QuantizeTwin)
	t.Run("RowsMatchOneRow", TestInt8RowsMatchOneRow)
	t.Run("CodebookBound", TestInt8CodebookBound)
	t.Run("Mul", TestMulRandomShapes) // the panel path, with the fast kernels off
}
