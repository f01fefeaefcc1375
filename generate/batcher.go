package generate

import (
	"sync"
	"time"

	"forge/model"
)

// Batcher runs the decode steps of Engines that decode at the same time
// (server slots) as one model.StepBatch, so that a step reads the weights
// once for all of them. Each row is computed as its Engine's own decode
// step computes it, so batching never changes a reply; it only pays when
// a step is bound by reading the weights (NewBatcher decides).
//
// The first Engine to ask for a step gathers: it waits until every Engine
// in its decode loop has asked too, or batchWait has passed (an Engine
// busy elsewhere — writing to a slow client — does not hold the others
// back longer), then runs the batch for all who asked and hands each its
// row. Steps asked for while a batch runs gather the next one. Plain
// decode steps go through it; speculative rounds and prefills do not.
type Batcher struct {
	m  *model.Model
	on bool

	mu     sync.Mutex
	active int        // Engines in their decode loop (join/leave)
	gather *gathering // the batch being gathered, nil if none
	wait   time.Duration
	free   []*gathering
	bats   sync.Pool // of *model.Batch, one per batch running
	stats  BatchStats
}

// BatchStats count a Batcher's work.
type BatchStats struct {
	Batches int64 // StepBatch calls
	Rows    int64 // decode steps they ran
	Shared  int64 // of those, steps that ran in a batch of two or more
}

// Stats returns the counts so far.
func (b *Batcher) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// gathering is one batch: its requests and the signal that every active
// Engine has joined it.
type gathering struct {
	reqs   []*stepReq
	full   chan struct{}
	timer  *time.Timer
	states []*model.State // StepBatch's arguments, reused
	toks   []int
}

// stepReq is one Engine's step in a batch.
type stepReq struct {
	s      *model.State
	tok    int
	logits []float32 // the Engine's buffer, filled with its row
	err    error
	done   chan struct{}
}

// BatchBytes is the least weights a decode step reads for which
// NewBatcher batches: a step that small is bound by computation rather
// than by reading the weights, and two Engines stepping at once on the
// shared pool make more tokens per second than one batch of their rows
// (BENCHMARKS.md, issue 13: forge-tiny).
const BatchBytes = 64 << 20

// Batch modes for NewBatcher.
const (
	BatchAuto = iota // batch when a step reads at least BatchBytes of weights
	BatchOn
	BatchOff
)

// batchWait bounds how long a gathering batch waits for the other Engines
// in their decode loop: a fraction of a step, so that a missing Engine
// costs the others little.
const (
	batchWaitMin = 50 * time.Microsecond
	batchWaitMax = 20 * time.Millisecond
)

// NewBatcher returns a Batcher for Engines of m; mode is BatchAuto,
// BatchOn or BatchOff (every step alone).
func NewBatcher(m *model.Model, mode int) *Batcher {
	b := &Batcher{m: m, on: mode == BatchOn || mode == BatchAuto && m.WeightBytes() >= BatchBytes, wait: batchWaitMin}
	b.bats.New = func() any { return m.NewBatch() }
	return b
}

// On reports whether the Batcher batches.
func (b *Batcher) On() bool { return b != nil && b.on }

// join and leave count the Engines in their decode loop.
func (b *Batcher) join() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

func (b *Batcher) leave() {
	b.mu.Lock()
	b.active--
	if g := b.gather; g != nil && len(g.reqs) >= b.active {
		b.gather = nil
		close(g.full) // the ones waiting need not wait for this one
	}
	b.mu.Unlock()
}

// step runs s's decode step of tok, batched with the other Engines', and
// fills r.logits with its logits.
func (b *Batcher) step(r *stepReq) error {
	b.mu.Lock()
	if g := b.gather; g != nil { // join the batch being gathered
		g.reqs = append(g.reqs, r)
		if len(g.reqs) >= b.active {
			b.gather = nil
			close(g.full)
		}
		b.mu.Unlock()
		<-r.done
		return r.err
	}
	g := b.newGathering()
	g.reqs = append(g.reqs, r)
	wait := b.wait
	if len(g.reqs) < b.active {
		b.gather = g
		b.mu.Unlock()
		if g.timer == nil {
			g.timer = time.NewTimer(wait)
		} else {
			g.timer.Reset(wait)
		}
		select {
		case <-g.full:
		case <-g.timer.C:
		}
		g.timer.Stop()
		b.mu.Lock()
		if b.gather == g {
			b.gather = nil
		}
	}
	reqs := g.reqs
	b.mu.Unlock()

	t0 := time.Now()
	bat := b.bats.Get().(*model.Batch)
	g.states, g.toks = g.states[:0], g.toks[:0]
	for _, q := range reqs {
		g.states, g.toks = append(g.states, q.s), append(g.toks, q.tok)
	}
	lg, err := b.m.StepBatch(bat, g.states, g.toks)
	for i, q := range reqs {
		if q.err = err; err == nil {
			copy(q.logits, lg.Row(i))
		}
		if q != r {
			q.done <- struct{}{}
		}
	}
	b.bats.Put(bat)
	b.mu.Lock()
	b.wait = min(max(time.Since(t0)/2, batchWaitMin), batchWaitMax)
	b.stats.Batches++
	b.stats.Rows += int64(len(reqs))
	if len(reqs) > 1 {
		b.stats.Shared += int64(len(reqs))
	}
	g.reqs = g.reqs[:0]
	b.free = append(b.free, g)
	b.mu.Unlock()
	return r.err
}

// newGathering returns an empty gathering (b.mu held).
func (b *Batcher) newGathering() *gathering {
	if n := len(b.free); n > 0 {
		g := b.free[n-1]
		b.free = b.free[:n-1]
		g.full = make(chan struct{})
		return g
	}
	return &gathering{full: make(chan struct{})}
}
