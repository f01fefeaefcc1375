package tensor

import (
	"runtime"
	"sync"
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

// pool is the process-wide set of worker goroutines. mu is held for the
// whole of a call; queues grows (never shrinks) to GOMAXPROCS-1 workers.
type pool struct {
	mu     sync.Mutex
	queues []chan span // one per worker, buffered 1
	wg     sync.WaitGroup
}

var workers pool

// run splits [0,n) into k chunks, hands chunks 1…k-1 to workers, runs chunk
// 0 itself and waits. p.mu is held on entry and released on return.
func (p *pool) run(n, k int, fn func(lo, hi int)) {
	defer p.mu.Unlock()
	for len(p.queues) < k-1 {
		q := make(chan span, 1)
		p.queues = append(p.queues, q)
		go p.work(q)
	}
	p.wg.Add(k - 1)
	for i := 1; i < k; i++ {
		p.queues[i-1] <- span{fn, i * n / k, (i + 1) * n / k}
	}
	defer p.wg.Wait() // also on a panic in chunk 0, before mu is released
	fn(0, n/k)
}

// work is a worker's loop: run each span received on q.
func (p *pool) work(q chan span) {
	for s := range q {
		s.fn(s.lo, s.hi)
		p.wg.Done()
	}
}
