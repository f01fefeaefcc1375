package tensor

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel calls fn on contiguous chunks [lo, hi) that together cover
// [0, n) on the Default pool, and returns when all calls have returned.
// It is ParallelGrain(n, 1, fn).
func Parallel(n int, fn func(lo, hi int)) { Default.Run(n, 1, fn) }

// ParallelGrain is Parallel with chunks of at least grain items (except
// when n < grain), on the Default pool (Pool.Run).
func ParallelGrain(n, grain int, fn func(lo, hi int)) { Default.Run(n, grain, fn) }

// ParallelGuided is ParallelGrain with chunks that shrink as the work
// runs out, on the Default pool (Pool.RunGuided): for fn whose results do
// not depend on where the chunks split.
func ParallelGuided(n, grain int, fn func(lo, hi int)) { Default.RunGuided(n, grain, fn) }

// Default is the process-wide pool every kernel uses: GOMAXPROCS−1
// workers besides the calling goroutines.
var Default = NewPool(0)

// Pool runs data-parallel calls on persistent worker goroutines. Any
// number of goroutines may call Run at once: each call's chunks are
// claimed one at a time from a shared counter by its caller and by
// whichever workers are free, so concurrent calls share the workers
// (every call makes progress on its own goroutine and idle workers help
// the oldest call with work left), and a worker that the operating system
// has descheduled never holds up a call whose remaining chunks the caller
// can take itself.
//
// Waiting is bounded spinning, then blocking. A hand-off to a parked
// goroutine costs about 20 µs here (futex wake-ups), more than a whole
// decode-step product of a small model, so idle workers and a caller
// waiting for its last chunks poll (an atomic, yielding to other goroutines
// with runtime.Gosched about every microsecond) for up to
// spinFor before they block. Polling only pays when the machine has cores
// to spare: when a hand-off to a polling worker takes longer than
// busyLatency — the operating system did not run it — the pool stops
// polling for busyBackoff, so on a loaded machine it blocks at once and
// uses no more CPU than its work.
type Pool struct {
	size int // workers (goroutines besides the callers)

	mu      sync.Mutex
	jobs    []*job // calls with unclaimed chunks, oldest first
	free    []*job // recycled jobs (Run allocates nothing in steady state)
	workers []*worker

	seq       atomic.Uint64 // bumped whenever a job is posted
	quietTill atomic.Int64  // unix nanoseconds until which nobody polls
}

// NewPool returns a pool of workers goroutines (0: GOMAXPROCS−1), started
// on first use.
func NewPool(workers int) *Pool {
	if workers <= 0 {
		workers = max(runtime.GOMAXPROCS(0)-1, 0)
	}
	return &Pool{size: workers}
}

const (
	// spinFor is how long an idle worker, or a caller waiting for its
	// workers, polls before it blocks. It outlasts the gaps inside a
	// decode step (a stage's last chunk on one core, then the serial work
	// before the next stage: up to ~100 µs on the synth-1.4b): at 50 µs a
	// worker blocked about twelve times a token there and each post then
	// waited for a wake-up, and decode read 85.1% of the read bandwidth
	// against 88.7% at 500 µs (alternated runs, BENCHMARKS.md). An idle
	// pool still blocks 500 µs after its last call.
	spinFor = 500 * time.Microsecond
	// spinYield is how many polls of an atomic a polling goroutine makes
	// between yields (runtime.Gosched, about a microsecond apart): a
	// yield at every poll sends each poll through the scheduler's run
	// queue and its lock, which slowed hand-offs and the caller.
	spinYield = 256
	// busyLatency is the hand-off time to a polling worker beyond which
	// the machine is taken to be busy (an unloaded hand-off takes < 5 µs).
	busyLatency = 500 * time.Microsecond
	// busyBackoff is how long the pool then blocks instead of polling.
	busyBackoff = 100 * time.Millisecond
	// chunksPerWorker splits a call into up to this many chunks per
	// goroutine, so that a slow or descheduled one delays a call by a
	// fraction of it, and so that the goroutine that runs a call's last
	// chunk keeps the others waiting for a fraction of a chunk: on the
	// synth-1.4b's decode (stages of 2–14 MB of weights) 8 read 85.5% of
	// the read bandwidth against 82.1% for 4 (six alternated runs of five
	// repetitions, BENCHMARKS.md).
	chunksPerWorker = 8
)

// Run calls fn on contiguous chunks [lo, hi) that together cover [0, n),
// each of at least grain items (one chunk when n < 2·grain), and returns
// when all calls have returned. It uses k = min(chunksPerWorker·(workers+1),
// ⌊n/grain⌋) chunks (at least one), chunk i being [i·n/k, (i+1)·n/k); with
// k = 1 it simply calls fn(0, n). Chunks run on the caller's goroutine and
// on the pool's workers, in any order and concurrently.
//
// A call allocates nothing as long as fn itself does not have to be
// allocated. fn escapes: a closure that captures variables is
// heap-allocated at every call that builds it. Hot paths should therefore
// pass a func value built once — typically a method value stored in a
// reusable job struct:
//
//	type job struct{ dst, x *Matrix; run func(lo, hi int) }
//	j := &job{}; j.run = j.rows // once (or per sync.Pool New)
//	j.dst, j.x = dst, x
//	tensor.ParallelGrain(n, grain, j.run)
//
// Calls may nest (fn may call Run) and may come from many goroutines at
// once. fn must not panic: a panic in a worker ends the program.
func (p *Pool) Run(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	k := min(chunksPerWorker*(p.size+1), n/grain)
	if k <= 1 || p.size == 0 {
		fn(0, n)
		ClearUpper()
		return
	}
	j := p.post(n, k, 0, fn)
	j.work()
	p.wait(j)
}

// RunGuided is Run with guided self-scheduling (Polychronopoulos and
// Kuck, 1987): each claim takes c = max(grain, ⌈r/(2·g)⌉) of the r items
// left, g being the goroutines that can run them (workers + 1), so the
// first chunks are long, sequential runs and the last ones grain items.
// The goroutine that takes a call's last chunk keeps the others waiting
// for at most grain items, where Run's equal chunks cost up to a whole
// chunk (n/k items) at the end of every call. Chunk boundaries depend on
// which goroutine claims first: fn's results must not depend on them
// (a product whose rows are computed alike wherever a chunk starts).
func (p *Pool) RunGuided(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if n > math.MaxInt32 { // the job counts items in int32
		p.Run(n, grain, fn)
		return
	}
	grain = max(grain, 1)
	if n < 2*grain || p.size == 0 {
		fn(0, n)
		ClearUpper()
		return
	}
	j := p.post(n, n, grain, fn)
	j.work()
	p.wait(j)
}

// job is one Run call (guided > 0: one RunGuided call, whose next and
// left count items, k = n).
type job struct {
	fn      func(lo, hi int)
	n, k    int
	guided  int          // RunGuided's grain; 0 for Run
	parts   int          // RunGuided: 2·(workers + 1)
	next    atomic.Int32 // next chunk to claim (guided: next item)
	left    atomic.Int32 // chunks not yet finished (guided: items)
	waiting atomic.Bool  // the caller blocks on done
	users   atomic.Int32 // workers holding the job (claim → work)
	done    chan struct{}
	posted  int64 // unix nanoseconds
}

// work runs unclaimed chunks of j until none is left; it reports whether
// it ran any.
func (j *job) work() bool {
	ran := false
	for {
		lo, hi := 0, 0
		if j.guided > 0 {
			lo = int(j.next.Load())
			if lo >= j.n {
				return ran
			}
			hi = min(j.n, lo+max(j.guided, (j.n-lo+j.parts-1)/j.parts))
			if !j.next.CompareAndSwap(int32(lo), int32(hi)) {
				continue // another goroutine claimed from lo first
			}
		} else {
			i := int(j.next.Add(1)) - 1
			if i >= j.k {
				return ran
			}
			lo, hi = i*j.n/j.k, (i+1)*j.n/j.k
		}
		ran = true
		j.fn(lo, hi)
		ClearUpper()
		done := int32(1)
		if j.guided > 0 {
			done = int32(hi - lo)
		}
		if j.left.Add(-done) == 0 && j.waiting.Load() {
			select {
			case j.done <- struct{}{}:
			default:
			}
		}
	}
}

// post publishes a call of k chunks (guided > 0: RunGuided's items, k =
// n) and wakes parked workers for it.
func (p *Pool) post(n, k, guided int, fn func(lo, hi int)) *job {
	p.mu.Lock()
	for len(p.workers) < p.size {
		w := &worker{p: p, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go w.loop()
	}
	var j *job
	for i := len(p.free) - 1; i >= 0; i-- {
		if p.free[i].users.Load() == 0 { // no worker still looks at it
			j = p.free[i]
			p.free = append(p.free[:i], p.free[i+1:]...)
			break
		}
	}
	if j == nil {
		j = &job{done: make(chan struct{}, 1)}
	}
	// A worker that ran the previous call's last chunk after its owner had
	// seen the call finish sent its wake-up into the retired job (before
	// letting go of it, so it is here now): drop it, or this call's owner
	// would take it for its own and return early.
	select {
	case <-j.done:
	default:
	}
	j.fn, j.n, j.k, j.guided, j.parts = fn, n, k, guided, 2*(p.size+1)
	j.next.Store(0)
	j.left.Store(int32(k))
	j.waiting.Store(false)
	j.posted = time.Now().UnixNano()
	p.jobs = append(p.jobs, j)
	p.seq.Add(1)
	wake := k - 1
	for _, w := range p.workers {
		if wake == 0 {
			break
		}
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
				wake--
			default:
			}
		}
	}
	p.mu.Unlock()
	return j
}

// wait returns when every chunk of j has finished, then retires j. It
// polls for up to spinFor (unless the machine is busy), then blocks.
func (p *Pool) wait(j *job) {
	if j.left.Load() != 0 && p.polling() {
		t0 := time.Now()
		for i := 1; j.left.Load() != 0; i++ {
			if i%spinYield == 0 {
				if time.Since(t0) > spinFor {
					break
				}
				runtime.Gosched()
			}
		}
	}
	if j.left.Load() != 0 {
		j.waiting.Store(true)
		if j.left.Load() != 0 {
			<-j.done
		}
	}
	p.mu.Lock()
	for i, x := range p.jobs {
		if x == j {
			p.jobs = append(p.jobs[:i], p.jobs[i+1:]...)
			break
		}
	}
	select { // a wake-up that raced with the last check
	case <-j.done:
	default:
	}
	j.fn = nil
	p.free = append(p.free, j)
	p.mu.Unlock()
}

// polling reports whether waiting goroutines may poll now.
func (p *Pool) polling() bool { return time.Now().UnixNano() >= p.quietTill.Load() }

// claim returns the oldest job with unclaimed chunks, or nil. The caller
// must call j.users.Add(-1) when it stops looking at j.
func (p *Pool) claim() *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range p.jobs {
		if int(j.next.Load()) < j.k {
			j.users.Add(1)
			return j
		}
	}
	return nil
}

// worker is one persistent goroutine. parked is set while it blocks on
// wake; a poster checks it after publishing a job and the worker checks
// for jobs after setting it, so (atomics being sequentially consistent)
// one of them sees the other and no wake-up is lost. A stale token in
// wake only costs one extra look.
type worker struct {
	p      *Pool
	parked atomic.Bool
	wake   chan struct{} // buffered 1
}

// loop is a worker's life: help with posted jobs; when there are none,
// poll for up to spinFor (unless the machine is busy), then block.
//
// A job found right after polling measures the machine: if it was posted
// more than busyLatency earlier, the operating system did not run this
// polling goroutine in time, and the pool stops polling for busyBackoff.
func (w *worker) loop() {
	p := w.p
	polled := false
	for {
		seen := p.seq.Load()
		if j := p.claim(); j != nil {
			late := time.Now().UnixNano()-j.posted > int64(busyLatency)
			if j.work() && polled && late {
				p.quietTill.Store(time.Now().Add(busyBackoff).UnixNano())
			}
			j.users.Add(-1)
			polled = false
			continue
		}
		if p.polling() {
			t0 := time.Now()
			for i := 1; p.seq.Load() == seen; i++ {
				if i%spinYield == 0 {
					if time.Since(t0) > spinFor {
						break
					}
					runtime.Gosched()
				}
			}
			if p.seq.Load() != seen {
				polled = true
				continue
			}
		}
		w.parked.Store(true)
		if p.seq.Load() == seen {
			<-w.wake
		}
		w.parked.Store(false)
		polled = false
	}
}
