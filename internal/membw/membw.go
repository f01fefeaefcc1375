package membw

import (
	"runtime"
	"sync"
	"time"
)

const (
	// DefaultBytes is the buffer size used when a caller passes bytes ≤ 0.
	DefaultBytes = 1 << 30
	// Passes is how many timed passes Read and Copy take the best of.
	Passes = 5
)

// Read returns the read bandwidth in GB/s of threads goroutines summing a
// buffer of the given size (bytes ≤ 0: DefaultBytes; threads ≤ 0:
// GOMAXPROCS), the best of Passes passes after one warm-up pass.
func Read(bytes int64, threads int) float64 {
	buf := NewBuffer(bytes)
	ReadPass(buf, threads) // warm-up: TLB, page tables, goroutine start
	return ReadBuffer(buf, threads, Passes)
}

// ReadBuffer is Read on a buffer made by NewBuffer (and read once
// before), the best of passes passes (≤ 0: Passes): for callers that
// measure again and again, next to the work they judge by it, without
// allocating a buffer each time.
func ReadBuffer(buf []uint64, threads, passes int) float64 {
	if passes <= 0 {
		passes = Passes
	}
	best := time.Duration(1<<63 - 1)
	for range passes {
		best = min(best, ReadPass(buf, threads))
	}
	return gbps(int64(len(buf))*8, best)
}

// Copy returns the copy bandwidth in GB/s (bytes read plus bytes written)
// of threads goroutines copying one buffer of the given size into another
// (bytes ≤ 0: DefaultBytes each; threads ≤ 0: GOMAXPROCS), best of Passes.
func Copy(bytes int64, threads int) float64 {
	src, dst := NewBuffer(bytes), NewBuffer(bytes)
	CopyPass(dst, src, threads)
	best := time.Duration(1<<63 - 1)
	for range Passes {
		best = min(best, CopyPass(dst, src, threads))
	}
	return gbps(2*int64(len(src))*8, best)
}

// NewBuffer returns a buffer of about bytes bytes (bytes ≤ 0: DefaultBytes)
// with every page written, ready for ReadPass and CopyPass.
func NewBuffer(bytes int64) []uint64 {
	if bytes <= 0 {
		bytes = DefaultBytes
	}
	buf := make([]uint64, max(bytes/8, 64))
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf
}

// ReadPass sums buf once with threads goroutines (≤ 0: GOMAXPROCS) and
// returns the elapsed time.
func ReadPass(buf []uint64, threads int) time.Duration {
	return pass(len(buf), threads, func(lo, hi int) uint64 { return sum(buf[lo:hi]) })
}

// CopyPass copies src into dst (equal lengths) once with threads goroutines
// (≤ 0: GOMAXPROCS) and returns the elapsed time.
func CopyPass(dst, src []uint64, threads int) time.Duration {
	if len(dst) != len(src) {
		panic("membw.CopyPass: length mismatch")
	}
	return pass(len(src), threads, func(lo, hi int) uint64 { return uint64(copy(dst[lo:hi], src[lo:hi])) })
}

// pass runs fn over [0,n) split into threads contiguous parts, one goroutine
// each, released together, and times it until the last part finishes.
func pass(n, threads int, fn func(lo, hi int) uint64) time.Duration {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	results := make([]uint64, threads)
	for i := range threads {
		// Parts are multiples of 64 words so SIMD loops see whole vectors.
		lo, hi := i*n/threads&^63, (i+1)*n/threads&^63
		if i == threads-1 {
			hi = n
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			results[i] = fn(lo, hi)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0) // results, on the heap, keep the sums from being optimized away
}

// gbps converts bytes moved in d to decimal gigabytes per second.
func gbps(bytes int64, d time.Duration) float64 {
	return float64(bytes) / d.Seconds() / 1e9
}

// sumGo is the portable read loop: eight words per iteration into four
// independent accumulators.
func sumGo(b []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		c := b[i : i+8 : i+8]
		s0 += c[0] + c[4]
		s1 += c[1] + c[5]
		s2 += c[2] + c[6]
		s3 += c[3] + c[7]
	}
	for ; i < len(b); i++ {
		s0 += b[i]
	}
	return s0 + s1 + s2 + s3
}
