//go:build !(goexperiment.simd && amd64)

package lut

// Without GOEXPERIMENT=simd on amd64 only the portable kernel (mulGo)
// exists.
const fastReady = false

// fastX is empty: there are no fast kernels to lay x out for.
//
//lint:ignore U1000 embedded in mulJob, which the simd build fills
type fastX struct{}

func (j *mulJob) prepare() {}

func (j *mulJob) fastRows(r0, r1, t0, t1 int) { panic("lut: no fast kernels in this build") }

func (j *mulJob) a2Prepare() bool { return false }

func (j *mulJob) a2Rows(r0, r1 int) { panic("lut: no AVX2 kernels in this build") }
