//go:build !(goexperiment.simd && amd64)

package tensor

// ClearUpper does nothing in builds without the vector kernels.
func ClearUpper() {}

// PreemptDirtiesUpper is false without the vector kernels.
func PreemptDirtiesUpper() bool { return false }
