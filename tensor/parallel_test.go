package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelCovers checks that the chunks tile [0,n) exactly once and
// respect the grain, for small and odd n, with equal chunks (at most
// chunksPerWorker a goroutine) and with guided ones (each at least grain
// but the one that ends at n, and no longer than ⌈r/(2·goroutines)⌉ of
// the r items left when it started, unless that is under grain).
func TestParallelCovers(t *testing.T) {
	parts := 2 * (Default.size + 1)
	for _, guided := range []bool{false, true} {
		run := ParallelGrain
		if guided {
			run = ParallelGuided
		}
		for _, n := range []int{0, 1, 2, 3, 7, 64, 1001, 100000} {
			for _, grain := range []int{0, 1, 5, 100, 5000} {
				hits := make([]int32, n)
				var mu sync.Mutex
				var chunks int
				run(n, grain, func(lo, hi int) {
					mu.Lock()
					chunks++
					mu.Unlock()
					if hi-lo < grain && hi-lo != n && !(guided && hi == n) {
						t.Errorf("guided=%v n=%d grain=%d: chunk [%d,%d) below grain", guided, n, grain, lo, hi)
					}
					if most := max(grain, (n-lo+parts-1)/parts); guided && hi-lo > most && hi-lo != n {
						t.Errorf("n=%d grain=%d: guided chunk [%d,%d) longer than %d", n, grain, lo, hi, most)
					}
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("guided=%v n=%d grain=%d: item %d visited %d times", guided, n, grain, i, h)
					}
				}
				if most := chunksPerWorker * (Default.size + 1); !guided && chunks > most {
					t.Errorf("n=%d grain=%d: %d chunks > %d", n, grain, chunks, most)
				}
			}
		}
	}
}

// TestParallelNested checks that Parallel called from inside a chunk (and
// concurrently from many goroutines) completes and covers everything.
func TestParallelNested(t *testing.T) {
	var total atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				Parallel(8, func(lo, hi int) {
					for range hi - lo {
						Parallel(10, func(lo, hi int) { total.Add(int64(hi - lo)) })
					}
				})
			}
		}()
	}
	wg.Wait()
	if got, want := total.Load(), int64(4*50*8*10); got != want {
		t.Errorf("nested total = %d, want %d", got, want)
	}
}

// TestPoolBusyWorker: a call never waits for a worker that is busy
// elsewhere (here: stuck in another call's chunk until released) — the
// caller takes every unclaimed chunk itself — and both calls complete.
func TestPoolBusyWorker(t *testing.T) {
	p := NewPool(1)
	release := make(chan struct{})
	started := make(chan struct{})
	first := make(chan struct{})
	go func() {
		p.Run(2, 1, func(lo, hi int) {
			if lo == 1 { // whichever goroutine runs chunk 1 holds it
				close(started)
				<-release
			}
		})
		close(first)
	}()
	<-started
	var sum atomic.Int64
	p.Run(1000, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 1000 {
		t.Errorf("second call covered %d of 1000", sum.Load())
	}
	close(release)
	<-first
}

// TestPoolConcurrent: many goroutines calling one pool at once each get
// every item of their own call exactly once.
func TestPoolConcurrent(t *testing.T) {
	p := NewPool(3)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 100 + 37*g
			for range 200 {
				hits := make([]int32, n)
				run := p.Run
				if g%2 == 1 { // guided and equal calls share the workers
					run = p.RunGuided
				}
				run(n, 3, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Errorf("goroutine %d: item %d visited %d times", g, i, h)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

type sumJob struct {
	data []float32
	part [64]float32
	run  func(lo, hi int)
}

func (j *sumJob) rows(lo, hi int) {
	var s float32
	for _, v := range j.data[lo:hi] {
		s += v
	}
	j.part[lo*len(j.part)/len(j.data)] += s
}

// TestParallelNoAlloc checks the documented zero-allocation pattern.
func TestParallelNoAlloc(t *testing.T) {
	j := &sumJob{data: make([]float32, 1<<12)}
	j.run = j.rows
	Parallel(len(j.data), j.run) // start the workers
	if a := testing.AllocsPerRun(100, func() { Parallel(len(j.data), j.run) }); a != 0 {
		t.Errorf("Parallel allocates %v times per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { ParallelGuided(len(j.data), 64, j.run) }); a != 0 {
		t.Errorf("ParallelGuided allocates %v times per call", a)
	}
}

// BenchmarkParallel measures what a call costs beyond its work: each of
// two chunks busy-waits 20 µs, so ns/op − 20,000 is the hand-off and
// wake-up overhead (about 22 µs with workers that block on a channel,
// under 1 µs with the polling hand-off; "alone" is one chunk inline).
func BenchmarkParallel(b *testing.B) {
	var sink [2]int
	fn := func(lo, hi int) {
		t := time.Now()
		for time.Since(t) < 20*time.Microsecond {
			sink[lo]++
		}
	}
	b.Run("two", func(b *testing.B) {
		for b.Loop() {
			ParallelGrain(2, 1, fn)
		}
	})
	b.Run("alone", func(b *testing.B) {
		for b.Loop() {
			fn(0, 1)
		}
	})
}

// BenchmarkHandoff measures the floor under any hand-off between two
// cores: one goroutine stores a count in a cache line, another that polls
// it stores the count back in a second line, and the first polls for it;
// ns/op is one round trip (two transfers of a line between the cores).
// A pool call costs a few such round trips beyond its work
// (BenchmarkParallel), and a product's rows written on one core and read
// on the other cost them too, line by line. With one core (-cpu 1) the
// polls yield to each other and it measures the scheduler instead.
func BenchmarkHandoff(b *testing.B) {
	type line struct {
		v atomic.Int64
		_ [56]byte
	}
	var ping, pong line
	// poll waits until l holds v or a negative value (stop), and returns it.
	poll := func(l *line, v int64) int64 {
		for i := 1; ; i++ {
			if x := l.v.Load(); x == v || x < 0 {
				return x
			}
			if i%spinYield == 0 {
				runtime.Gosched()
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); poll(&ping, i) > 0; i++ {
			pong.v.Store(i)
		}
	}()
	var i int64
	for b.Loop() {
		i++
		ping.v.Store(i)
		poll(&pong, i)
	}
	ping.v.Store(-1)
	<-done
}

// TestPoolRecycledWakeup: a worker that finishes a job's last chunk just
// after its owner saw the job finish sends the owner's wake-up into a job
// already retired; the next call that recycles the job must not take that
// stale token for its own wake-up and return before its chunks have run
// (the server tests' data race). Simulated here: a token left in a free
// job, then a call whose owner blocks while the worker runs a chunk.
func TestPoolRecycledWakeup(t *testing.T) {
	p := NewPool(1)
	p.quietTill.Store(1 << 62) // never poll: owners block at once
	p.Run(2, 1, func(lo, hi int) {})
	p.mu.Lock()
	if len(p.free) == 0 {
		p.mu.Unlock()
		t.Fatal("no retired job to recycle")
	}
	p.free[len(p.free)-1].done <- struct{}{} // the late wake-up
	p.mu.Unlock()
	var done atomic.Int32
	p.Run(2, 1, func(lo, hi int) {
		if lo == 0 {
			time.Sleep(2 * time.Millisecond) // the owner's chunk: the worker takes the other meanwhile
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		done.Add(1)
	})
	if n := done.Load(); n != 2 {
		t.Fatalf("Run returned after %d of 2 chunks", n)
	}
}
