//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"testing"
)

// TestFloatAVX2Kernels runs the Mul tests with the AVX2 float kernels
// forced (the AVX-512 ones switched off), so that a CPU with AVX-512,
// where they would never run, tests them too; on an AVX2-only CPU the
// Mul tests' "fast" path already runs them.
func TestFloatAVX2Kernels(t *testing.T) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	f, a := fastReady, floatA2
	fastReady, floatA2 = false, true
	defer func() { fastReady, floatA2 = f, a }()
	t.Run("Formats", TestMulFormats)
	t.Run("RotationLowRank", TestMulRotationLowRank)
	t.Run("RandomShapes", TestMulRandomShapes)
	t.Run("Rows", TestMulRows)
	t.Run("NoAlloc", TestMulNoAlloc)
}
