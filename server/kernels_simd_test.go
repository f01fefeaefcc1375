//go:build goexperiment.simd && amd64

package server_test

// fastKernels: the model runs its vector kernels (the tests can afford
// more work).
const fastKernels = true
