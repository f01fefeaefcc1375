//go:build goexperiment.simd && amd64

package model

import (
	"simd/archsimd"
	"testing"
)

// TestAVX2Twins runs the vector twins' tests with the AVX2 kernels
// forced (the AVX-512 ones switched off), so that a CPU with AVX-512,
// where they would never run, tests them too.
func TestAVX2Twins(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	v, v2, a2 := vecReady, vec2Ready, att2Ready
	vecReady, vec2Ready, att2Ready = false, true, archsimd.X86.FMA()
	defer func() { vecReady, vec2Ready, att2Ready = v, v2, a2 }()
	t.Run("Exp32x8", TestExp32x8)
	t.Run("Elementwise", TestVecElementwise)
	t.Run("SumSquares", TestSumSquares)
	t.Run("DeltaStep", TestDeltaStepTwins)
	t.Run("DeltaChunk", TestDeltaChunkTwins)
	t.Run("AttendStep", TestAttendStep)
}
