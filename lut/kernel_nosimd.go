//go:build !(goexperiment.simd && amd64)

package lut

// Without GOEXPERIMENT=simd on amd64 only the portable kernel (mulGo)
// exists.
const fastReady = false

func (j *mulJob) prepare() {}

func (j *mulJob) fastRows(r0, r1, t0, t1 int) { panic("lut: no fast kernels in this build") }
