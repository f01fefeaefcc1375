//go:build !(goexperiment.simd && amd64)

package model

// Without GOEXPERIMENT=simd on amd64 there are no vector kernels: each
// reports that it did nothing and the scalar loops of vec.go run.

func swigluFast(g, up []float32) int                                                 { return 0 }
func siluFast(x []float32) int                                                       { return 0 }
func mulSiluFast(o, z []float32) int                                                 { return 0 }
func mulSigmoidFast(o, g []float32) int                                              { return 0 }
func mulAddFast(y, a, b []float32) int                                               { return 0 }
func addFast(y, a []float32) int                                                     { return 0 }
func axpyFast(y []float32, a float32, x []float32) int                               { return 0 }
func sumSquaresFast(acc *[16]float64, x []float32) int                               { return 0 }
func mulScaleFast(dst, x []float32, r float32, scale []float32) int                  { return 0 }
func mulScalarFast(x []float32, r float32) int                                       { return 0 }
func deltaStepFast(S, src, q, k, v []float32, alpha, beta float32, o []float32) bool { return false }

func deltaRowsFast(S, src []float32, rows []deltaRow, w, u []float32) bool { return false }

func values4(o, w []float32, ws int, V []float32, n, stride, off int) bool { return false }
func valuesI8(o, w []float32, ws int, V []int8, vs []float32, n, stride, off, hk, hkv int) bool {
	return false
}
func attendScoresHeads(w []float32, ws int, q, K []float32, heads, n, stride, off int, scale float32) bool {
	return false
}
func attendScoresF16Heads(w []float32, ws int, q []float32, K []uint16, heads, n, stride, off int, scale float32) bool {
	return false
}

// attendValues sets o to Σ_τ w[τ]·v_τ (attend's weighted sum; it only
// runs after attendScoresHeads, which this build does not have).
func attendValues(o, w, V []float32, n, stride, off int) {
	clear(o)
	for tau, e := range w[:n] {
		axpy(o, e, V[tau*stride+off:][:len(o)])
	}
}

// attendValuesInt8 is attend's int8 weighted sum (it only runs after
// attendScoresF16Heads, which this build does not have).
func attendValuesInt8(o, w []float32, V []int8, vs []float32, n, stride, off, hk, hkv int) {
	clear(o)
	for tau, e := range w[:n] {
		axpyInt8(o, e*vs[tau*hkv+hk], V[tau*stride+off:][:len(o)])
	}
}

func s0Dots(u, o, S, k, q []float32) bool                            { return false }
func rowsAxpyFast(y, a, X []float32) bool                            { return false }
func stateUpdate(S []float32, e float32, f, U []float32, n int) bool { return false }

// chunkDotBufs holds nothing where chunkDots has no vector loops.
type chunkDotBufs struct{}

func chunkDots(b *chunkDotBufs, C int, K, Q []float32, n, d int) (kk, qk []float32, ok bool) {
	return nil, nil, false
}
