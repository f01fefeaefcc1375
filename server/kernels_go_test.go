//go:build !(goexperiment.simd && amd64)

package server_test

// fastKernels: the model runs its pure-Go kernels, several times slower.
const fastKernels = false
