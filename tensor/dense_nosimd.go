//go:build !(goexperiment.simd && amd64)

package tensor

// Without GOEXPERIMENT=simd on amd64 only the portable kernels exist.
func init() { kern = &goKernels }

// kernelSets lists the kernel sets this build and CPU can run (for tests).
func kernelSets() []*kernelSet { return []*kernelSet{&goKernels} }
