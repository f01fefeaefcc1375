//go:build goexperiment.simd && amd64

package tensor

import "simd/archsimd"

// init picks the widest kernel set the CPU supports.
func init() {
	switch {
	case archsimd.X86.AVX512():
		kern = &avx512Kernels
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		kern = &avx2Kernels
	default:
		kern = &goKernels
	}
}

// kernelSets lists the kernel sets this build and CPU can run (for tests).
func kernelSets() []*kernelSet {
	sets := []*kernelSet{&goKernels}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		sets = append(sets, &avx2Kernels)
	}
	if archsimd.X86.AVX512() {
		sets = append(sets, &avx512Kernels)
	}
	return sets
}
