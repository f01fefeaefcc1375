// Package membw measures main-memory bandwidth, STREAM style, so that
// kernels that should be bandwidth bound (LLM decode reads every weight once
// per token) can be judged against what this machine can actually deliver.
//
// Method: a buffer much larger than the last-level cache (default 1 GiB; the
// L3 here is 32 MiB) is allocated and written once, which also faults its
// pages in. Each pass splits it into threads contiguous parts, one goroutine
// per part, started together; the pass time runs from the start until the
// last part is done. The best of several passes is reported, as STREAM does,
// in decimal GB/s (10⁹ bytes per second) of bytes actually moved:
//
//	Read:  sum of every 64-bit word            bytes read
//	Copy:  dst[i] = src[i] (runtime memmove)   bytes read + bytes written
//
// In a GOEXPERIMENT=simd build on amd64 the read loop uses 512-bit (AVX-512)
// or 256-bit (AVX2) integer adds with four independent accumulators, so that
// it is limited by memory rather than by the instruction stream; otherwise an
// unrolled scalar loop is used. Results are meaningful only on an otherwise
// idle machine.
package membw
