//go:build goexperiment.simd && amd64

package tensor

import "simd/archsimd"

var hasAVX = archsimd.X86.AVX()

// ClearUpper ends a stretch of AVX code (VZEROUPPER), so that the SSE
// instructions of ordinary Go code that follows (math.Exp, float64
// arithmetic) pay no transition penalty: on this project's Xeon host an
// exp after an AVX-512 kernel left the upper register halves dirty took
// 1,100 ns instead of 11 (BenchmarkExpAfterAVX). The compiler does not
// emit it for simd/archsimd code; the pool calls it after every chunk, and
// so must any other caller of a vector kernel that returns to scalar code.
func ClearUpper() {
	if hasAVX {
		archsimd.ClearAVXUpperBits()
	}
}

// PreemptDirtiesUpper reports whether Go's asynchronous preemption leaves
// the upper halves of the vector registers dirty on this build and CPU:
// with GOEXPERIMENT=simd the runtime saves and restores the full YMM or
// ZMM state around a preemption (runtime/preempt_amd64.s) and issues no
// VZEROUPPER, so after every preemption (sysmon's, every 10 ms of a busy
// goroutine) the scalar SSE code that follows runs in the slow
// transition state until the next ClearUpper. A program can avoid it with
// GODEBUG=asyncpreemptoff=1 (cmd/forge does).
func PreemptDirtiesUpper() bool { return archsimd.X86.AVX2() || archsimd.X86.AVX512() }
