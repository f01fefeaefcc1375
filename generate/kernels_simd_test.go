//go:build goexperiment.simd && amd64

package generate

// fastKernels: the model runs its vector kernels (the tests can afford
// more work).
const fastKernels = true
