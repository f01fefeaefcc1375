package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel calls fn on contiguous chunks [lo, hi) that together cover
// [0, n), one chunk per GOMAXPROCS, and returns when all calls have returned.
// It is ParallelGrain(n, 1, fn).
func Parallel(n int, fn func(lo, hi int)) { ParallelGrain(n, 1, fn) }

// ParallelGrain is Parallel with chunks of at least grain items (except
// when n < grain): it uses k = min(GOMAXPROCS, ⌊n/grain⌋) chunks (at least one), chunk i
// being [i·n/k, (i+1)·n/k). With k = 1 it simply calls fn(0, n).
//
// The chunks run on persistent worker goroutines (the caller runs chunk 0),
// so a call allocates nothing as long as fn itself does not have to be
// allocated. fn escapes: a closure that captures variables is heap-allocated
// at every call that builds it. Hot paths should therefore pass a func value
// built once — typically a method value stored in a reusable job struct:
//
//	type job struct{ dst, x *Matrix; run func(lo, hi int) }
//	j := &job{}; j.run = j.rows // once (or per sync.Pool New)
//	j.dst, j.x = dst, x
//	tensor.ParallelGrain(n, grain, j.run)
//
// One call at a time uses the workers. A call made while they are busy — a
// nested call from inside fn, or a concurrent call from another goroutine —
// runs fn(0, n) inline on its own goroutine instead, so nesting never
// deadlocks. fn must not panic: a panic in a worker ends the program.
func ParallelGrain(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	k := min(runtime.GOMAXPROCS(0), n/grain)
	if k <= 1 || !workers.mu.TryLock() {
		fn(0, n)
		return
	}
	workers.run(n, k, fn)
}

// span is one chunk of work handed to a worker.
type span struct {
	fn     func(lo, hi int)
	lo, hi int
}

// spinFor is how long an idle worker, or a caller waiting for its
// workers, polls before it blocks. Handing a chunk to a parked goroutine
// and waking a parked caller each cost about 20 µs here (futex wake-ups,
// measured by BenchmarkParallel), which is more than a whole decode-step
// matrix product of a small model; a decode step calls Parallel every few
// microseconds, so its workers never park.
const spinFor = 50 * time.Microsecond

// worker is one persistent goroutine. The caller publishes job, then
// bumps seq; the worker runs it and stores seq to done. parked is set
// while the worker blocks on wake; the caller checks it after bumping seq
// and the worker checks seq after setting it, so (atomics being
// sequentially consistent) one of them sees the other and no wake-up is
// lost. A stale token in wake only costs one extra check.
type worker struct {
	job    span
	seq    atomic.Uint64
	done   atomic.Uint64
	parked atomic.Bool
	wake   chan struct{} // buffered 1
}

// pool is the process-wide set of workers. mu is held for the whole of a
// call; workers grows (never shrinks) to GOMAXPROCS-1.
type pool struct {
	mu      sync.Mutex
	workers []*worker
}

var workers pool

// run splits [0,n) into k chunks, hands chunks 1…k-1 to workers, runs chunk
// 0 itself and waits. p.mu is held on entry and released on return.
func (p *pool) run(n, k int, fn func(lo, hi int)) {
	defer p.mu.Unlock()
	for len(p.workers) < k-1 {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go w.loop()
	}
	for i := 1; i < k; i++ {
		w := p.workers[i-1]
		w.job = span{fn, i * n / k, (i + 1) * n / k}
		w.seq.Add(1)
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	defer p.wait(k) // also on a panic in chunk 0, before mu is released
	fn(0, n/k)
}

// wait returns when workers 0…k-2 have finished their current job,
// polling (and yielding to other goroutines) rather than blocking: see
// spinFor.
func (p *pool) wait(k int) {
	for _, w := range p.workers[:k-1] {
		for w.done.Load() != w.seq.Load() {
			runtime.Gosched()
		}
	}
}

// loop is a worker's life: poll for a new job for spinFor, then block
// until woken; run the job; repeat. The polls yield (runtime.Gosched):
// a tight loop that keeps its P measured 7× slower hand-offs, as woken
// goroutines then wait to be stolen from a busy P.
func (w *worker) loop() {
	var last uint64
	for {
		t0 := time.Now()
		for i := 0; w.seq.Load() == last; i++ {
			if i%64 == 63 && time.Since(t0) > spinFor {
				w.parked.Store(true)
				if w.seq.Load() == last {
					<-w.wake
				}
				w.parked.Store(false)
				t0 = time.Now()
				continue
			}
			runtime.Gosched()
		}
		last = w.seq.Load()
		j := w.job
		j.fn(j.lo, j.hi)
		w.done.Store(last)
	}
}
