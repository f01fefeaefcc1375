//go:build !(goexperiment.simd && amd64)

package membw

// sum adds every word of b (wrapping); see sumGo.
func sum(b []uint64) uint64 { return sumGo(b) }
