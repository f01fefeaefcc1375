//go:build !(goexperiment.simd && amd64)

package generate

// fastKernels: the model runs its pure-Go kernels, several times slower.
const fastKernels = false
