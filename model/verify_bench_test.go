package model_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"forge/model"
)

// BenchmarkVerify: a verify block of T rows (speculative decoding)
// against a plain decode step ("step") and T = 1, on
// forge-tiny (bf16, and rounded to LUT4) and the models benchModels adds
// (FORGE_BENCH_BUNDLE, FORGE_BENCH_1P4B), with int8 activations. Each
// block is committed whole, so the context grows as in decoding, within
// the decode benchmarks' window. µs/block over T is the cost per row.
func BenchmarkVerify(b *testing.B) {
	for name, dir := range benchModels(b) {
		b.Run(name+"/step", func(b *testing.B) {
			m := benchModel(b, name, dir)
			s := m.NewState()
			s.SetAct(model.ActInt8)
			mk := decodeStart(m, s)
			b.ResetTimer()
			for range b.N {
				if s.Pos()+1 > 4+decodeWindow {
					s.Rewind(mk)
				}
				m.Forward(s, []int{100})
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/block")
		})
		for _, T := range []int{1, 2, 3, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/T=%d", name, T), func(b *testing.B) {
				m, s, mk, block := verifyStart(b, name, dir, T)
				b.ResetTimer()
				for range b.N {
					if s.Pos()+T > 4+decodeWindow {
						s.Rewind(mk)
					}
					verifyAll(b, m, s, block)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/block")
			})
		}
	}
}

// verifyStart loads the benchmark model name and returns a State with int8
// activations after decodeStart's prompt, its mark, and a block of T
// tokens.
func verifyStart(b *testing.B, name, dir string, T int) (*model.Model, *model.State, model.Mark, []int) {
	m := benchModel(b, name, dir)
	s := m.NewState()
	s.SetAct(model.ActInt8)
	mk := decodeStart(m, s)
	block := make([]int, T)
	for i := range block {
		block[i] = 100 + i
	}
	return m, s, mk, block
}

// verifyAll verifies block on s and commits all its rows.
func verifyAll(b *testing.B, m *model.Model, s *model.State, block []int) {
	if _, err := m.Verify(s, block); err != nil {
		b.Fatal(err)
	}
	s.Commit(len(block))
}

// BenchmarkVerifyRatio: a verify block of T rows against T decode steps,
// in alternation, so that both meet the host in the same state (on a VM
// whose memory bandwidth moves with its neighbours, BenchmarkVerify's step
// and blocks, run one after the other, gave ratios from 1.6 to 1.9 in one
// hour). Each round decodes T tokens one step at a time and verifies T as
// one block (committed whole), in that order in even rounds and the other
// way in odd ones, on one State; the positions run on within the decode
// window, and a rewind at its end is not timed. Each kind runs as in its
// own decoding — speculative decoding's blocks after blocks (with only a
// small drafter's steps between), plain decoding's steps after steps —
// behind one untimed call of its kind; "/alternate" times the first call
// after the switch too: there the synth-1.4b's block after decode steps
// cost 3–6 ms more than after a block in some hours (in others nothing),
// nearly all in its delta rule, whose state the steps last wrote in place
// (BenchmarkVerifyAfter; BENCHMARKS.md, issue 14).
// Reports the step's and the block's µs, their ratio ("block/step", issue
// 14's speed aim at T = 8) and r, the cost of each row after the first in
// steps ((block/step − 1)/(T − 1)).
func BenchmarkVerifyRatio(b *testing.B) {
	for name, dir := range benchModels(b) {
		for _, T := range []int{2, 4, 8} {
			for _, alt := range []bool{false, true} {
				sub := fmt.Sprintf("%s/T=%d", name, T)
				if alt {
					sub += "/alternate"
				}
				b.Run(sub, func(b *testing.B) {
					m, s, mk, block := verifyStart(b, name, dir, T)
					verifyRatio(b, m, s, mk, block, !alt)
				})
			}
		}
	}
}

// verifyRatio runs BenchmarkVerifyRatio's rounds on s, rewound to mk at
// the window's end; with warm, each kind of call behind an untimed one.
func verifyRatio(b *testing.B, m *model.Model, s *model.State, mk model.Mark, block []int, warm bool) {
	T := len(block)
	var steps, blocks time.Duration
	steps1 := func() {
		if warm {
			m.Forward(s, block[:1])
		}
		t0 := time.Now()
		for i := range T {
			m.Forward(s, block[i:i+1])
		}
		steps += time.Since(t0)
	}
	block1 := func() {
		if warm {
			verifyAll(b, m, s, block)
		}
		t0 := time.Now()
		verifyAll(b, m, s, block)
		blocks += time.Since(t0)
	}
	per := 2 * T // positions a round
	if warm {
		per = 3*T + 1
	}
	b.ResetTimer()
	for i := range b.N {
		if s.Pos()+per > 4+decodeWindow {
			b.StopTimer()
			s.Rewind(mk)
			b.StartTimer()
		}
		if i%2 == 0 {
			steps1()
			block1()
		} else {
			block1()
			steps1()
		}
	}
	step := steps.Seconds() / float64(b.N*T)
	blk := blocks.Seconds() / float64(b.N)
	b.ReportMetric(step*1e6, "µs/step")
	b.ReportMetric(blk*1e6, "µs/block")
	b.ReportMetric(blk/step, "block/step")
	b.ReportMetric((blk/step-1)/float64(T-1), "r")
}

// BenchmarkDecodeBatch: n sequences decoding at once (server slots), int8
// activations: "apart", each on its own goroutine with decode steps on
// the shared pool, against "batched", one StepBatch of the n rows per step;
// tok/s of all n together ("one" is a single sequence alone).
func BenchmarkDecodeBatch(b *testing.B) {
	for name, dir := range benchModels(b) {
		m := benchModel(b, name, dir)
		for _, mode := range []string{"one", "apart", "batched"} {
			n := 2
			if mode == "one" {
				n = 1
			}
			b.Run(name+"/"+mode, func(b *testing.B) {
				states := make([]*model.State, n)
				marks := make([]model.Mark, n)
				for i := range states {
					states[i] = m.NewState()
					states[i].SetAct(model.ActInt8)
					marks[i] = decodeStart(m, states[i])
				}
				b.ResetTimer()
				if mode == "batched" {
					bat, toks := m.NewBatch(), make([]int, n)
					for range b.N {
						if states[0].Pos()+1 > 4+decodeWindow {
							for i, s := range states {
								s.Rewind(marks[i])
							}
						}
						if _, err := m.StepBatch(bat, states, toks); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					var wg sync.WaitGroup
					for i, s := range states {
						wg.Go(func() { decodeSteps(m, s, marks[i], b.N) })
					}
					wg.Wait()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// BenchmarkCommit: Commit of n of a verify block's eight rows (n < 8
// replays n rows on the committed state; n = 8 keeps the block's working
// state), timed alone after each block; reports µs a Commit.
func BenchmarkCommit(b *testing.B) {
	for name, dir := range benchModels(b) {
		for _, n := range []int{1, 4, 7, 8} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				m, s, mk, block := verifyStart(b, name, dir, 8)
				var commits time.Duration
				for range b.N {
					if s.Pos()+8 > 4+decodeWindow {
						s.Rewind(mk)
					}
					if _, err := m.Verify(s, block); err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					s.Commit(n)
					commits += time.Since(t0)
				}
				b.ReportMetric(float64(commits.Microseconds())/float64(b.N), "µs/commit")
			})
		}
	}
}

// BenchmarkVerifyAfter: what a verify block of eight rows costs after
// what came before it on its State, in turn round by round: after a
// block ("after-block", speculative decoding with every draft accepted
// and no drafter), after a block and seven decode steps of
// forge-tiny-draft on the drafter's own State ("after-drafter", a
// speculative round), and after eight of the model's own decode steps
// ("after-steps", BenchmarkVerifyRatio's "/alternate" rounds); µs a block
// each.
func BenchmarkVerifyAfter(b *testing.B) {
	for name, dir := range benchModels(b) {
		const T = 8
		b.Run(name, func(b *testing.B) {
			m, s, mk, block := verifyStart(b, name, dir, T)
			dm := loadModel(b, repoPath("models", "forge-tiny-draft"))
			ds := dm.NewState()
			ds.SetAct(model.ActInt8)
			dmk := decodeStart(dm, ds)
			var took [3]time.Duration
			var runs [3]int
			verify := func() time.Duration {
				t0 := time.Now()
				verifyAll(b, m, s, block)
				return time.Since(t0)
			}
			b.ResetTimer()
			for i := range b.N {
				if s.Pos()+2*T > 4+decodeWindow || ds.Pos()+T > 4+decodeWindow {
					b.StopTimer()
					s.Rewind(mk)
					ds.Rewind(dmk)
					b.StartTimer()
				}
				k := i % 3
				switch k {
				case 0:
					verify()
				case 1:
					verify()
					for j := range T - 1 {
						dm.Forward(ds, []int{block[j] % dm.Config().Vocab})
					}
				case 2:
					for j := range T {
						m.Forward(s, block[j:j+1])
					}
				}
				took[k] += verify()
				runs[k]++
			}
			for k, what := range []string{"after-block", "after-drafter", "after-steps"} {
				if runs[k] > 0 {
					b.ReportMetric(float64(took[k].Microseconds())/float64(runs[k]), "µs/"+what)
				}
			}
		})
	}
}
