package model_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"forge/internal/tinylut"
	"forge/model"
)

// verifySubjects are the models and settings a verify block must match
// decode steps on: forge-tiny as trained (bf16, dense kernels) and rounded
// to LUT4 (LUT kernels), with float32 and int8 activations, each KV cache
// format; and a random model with wide DeltaNet heads (wideHeads).
func verifySubjects(t *testing.T) []struct {
	name string
	m    *model.Model
	kv   model.KV
	act  model.Act
} {
	dense := loadModel(t, repoPath("models", "forge-tiny"))
	lut4, err := tinylut.Load(repoPath("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	type subject = struct {
		name string
		m    *model.Model
		kv   model.KV
		act  model.Act
	}
	return []subject{
		{"bf16", dense, model.KVFloat32, model.ActFloat32},
		{"wide-heads", wideHeads(t), model.KVFloat32, model.ActFloat32},
		{"bf16/kv-int8", dense, model.KVInt8, model.ActFloat32},
		{"lut4/f32", lut4, model.KVFloat32, model.ActFloat32},
		{"lut4/int8", lut4, model.KVFloat32, model.ActInt8},
		{"lut4/int8/kv-int8", lut4, model.KVInt8, model.ActInt8},
	}
}

// stateOf returns every part of s a later step reads: each DeltaNet
// layer's conv and recurrent state and each attention layer's keys and
// values (as floats; the int8 cache widened), with the position.
func stateOf(m *model.Model, s *model.State) [][]float32 {
	out := [][]float32{{float32(s.Pos())}}
	for li, k := range m.Config().Layers {
		if k == model.DeltaNet {
			conv, rec := s.DeltaNetState(li)
			out = append(out, append([]float32(nil), conv...), append([]float32(nil), rec...))
		} else {
			out = append(out, s.KVCacheHeads(li, true), s.KVCacheHeads(li, false))
		}
	}
	return out
}

func sameState(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bitsEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestVerifyMatchesSteps: a verify block's logits are the decode steps'
// logits bit for bit, row by row, and Commit(n) leaves the State exactly
// as n decode steps of the block's first n tokens would — the recurrent
// and conv states and both KV caches — for block lengths 1…8 and 17 and
// every commit count, including the pattern (T = 3, commits
// 3,1,3,0,3,3,1) and stacked one-row blocks (a drafter). Rows after the
// committed ones hold other tokens (rejected drafts), which must leave no
// trace. Equality is exact: each row runs a decode step's kernels on the
// same values in the same order, so no tolerance is needed (the reference
// checks its float64 block within 1e-8).
func TestVerifyMatchesSteps(t *testing.T) {
	subs := verifySubjects(t)
	// A large block's rows are quantized in its stages' chunks on the
	// pool (stage.quantizeRows): here forge-tiny's, with every input taken
	// as large and the pool always used.
	chunks := subs[4] // lut4/int8
	chunks.name = "lut4/int8/rows-in-chunks"
	subs = append(subs, chunks)
	for _, sub := range subs {
		t.Run(sub.name, func(t *testing.T) {
			if sub.name == chunks.name {
				defer model.SetQuantSplit(1)()
				defer sub.m.SetTimed(false)()
			}
			m := sub.m
			V := m.Config().Vocab
			r := rand.New(rand.NewPCG(11, uint64(len(sub.name))))
			prompt := randTokens(r, 23, V)
			seq := randTokens(r, 200, V) // the tokens the steps take, in order

			// Reference: decode steps, logits and state after each.
			ref := m.NewStateKV(sub.kv)
			ref.SetAct(sub.act)
			m.Forward(ref, prompt)
			var logits [][]float32
			states := [][][]float32{stateOf(m, ref)}
			for _, tok := range seq {
				logits = append(logits, copyOf(m.Forward(ref, []int{tok})))
				states = append(states, stateOf(m, ref))
			}

			s := m.NewStateKV(sub.kv)
			s.SetAct(sub.act)
			m.Forward(s, prompt)
			at := 0 // tokens of seq committed
			check := func(label string, T, commit int, stacked bool) {
				t.Helper()
				block := append([]int(nil), seq[at:at+T]...)
				for i := commit; i < T; i++ {
					block[i] = (block[i] + 1 + r.IntN(V-1)) % V // a rejected draft: another token
				}
				var rows [][]float32
				if stacked {
					for _, tok := range block {
						lg, err := m.Verify(s, []int{tok})
						if err != nil {
							t.Fatal(err)
						}
						rows = append(rows, copyOf(lg))
					}
				} else {
					lg, err := m.Verify(s, block)
					if err != nil {
						t.Fatal(err)
					}
					if lg.Rows != T {
						t.Fatalf("%s: %d rows of logits for a block of %d", label, lg.Rows, T)
					}
					for i := range T {
						rows = append(rows, append([]float32(nil), lg.Row(i)...))
					}
				}
				if s.Pending() != T || s.Pos() != len(prompt)+at {
					t.Fatalf("%s: pending %d pos %d after a block of %d", label, s.Pending(), s.Pos(), T)
				}
				for i := range commit { // the committed rows see only true tokens
					if !bitsEqual(rows[i], logits[at+i]) {
						t.Fatalf("%s: block row %d differs from decode step %d", label, i, at+i)
					}
				}
				s.Commit(commit)
				at += commit
				if s.Pending() != 0 || !sameState(stateOf(m, s), states[at]) {
					t.Fatalf("%s: after Commit(%d) the state is not that of %d decode steps", label, commit, at)
				}
			}
			for _, c := range []int{3, 1, 3, 0, 3, 3, 1} {
				check(fmt.Sprintf("T=3 commit %d at %d", c, at), 3, c, false)
			}
			for T := 1; T <= 8; T++ {
				for c := 0; c <= T; c++ {
					check(fmt.Sprintf("T=%d commit %d at %d", T, c, at), T, c, false)
				}
			}
			check("T=17", 17, 17, false)
			check("T=17 commit 5", 17, 5, false)
			check("stacked T=5 commit 2", 5, 2, true)
			check("stacked T=4 commit 4", 4, 4, true)

			// After the blocks, decode steps go on as on the reference.
			if got := copyOf(m.Forward(s, []int{seq[at]})); !bitsEqual(got, logits[at]) {
				t.Fatalf("decode step after the blocks differs")
			}
		})
	}
}

// TestVerifyMisuse: a pending State refuses what would read or save a
// state no decode steps reached; Commit beyond the pending rows panics;
// Reset and Rewind drop pending rows; a block past the context is an
// error before anything runs.
func TestVerifyMisuse(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	s := m.NewState()
	m.Forward(s, []int{1, 2, 3})
	mk := s.Mark()
	if _, err := m.Verify(s, []int{4, 5}); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"Forward":   func() { m.Forward(s, []int{6}) },
		"Mark":      func() { s.Mark() },
		"Snapshot":  func() { s.Snapshot() },
		"Commit(3)": func() { s.Commit(3) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a pending state did not panic", name)
				}
			}()
			f()
		}()
	}
	s.Rewind(mk)
	if s.Pending() != 0 || s.Pos() != 3 {
		t.Fatalf("after Rewind: pending %d pos %d", s.Pending(), s.Pos())
	}
	m.Forward(s, []int{6}) // usable again
	if _, err := m.Verify(s, []int{7}); err != nil {
		t.Fatal(err)
	}
	s.Reset()
	if s.Pending() != 0 || s.Pos() != 0 {
		t.Fatalf("after Reset: pending %d pos %d", s.Pending(), s.Pos())
	}
	if _, err := m.Verify(s, []int{m.Config().Vocab}); err == nil {
		t.Fatal("a token outside the vocabulary was verified")
	}
	long := make([]int, m.Config().MaxContext+1)
	if _, err := m.Verify(s, long); err == nil || s.Pending() != 0 {
		t.Fatalf("a block past the context: %v, pending %d", err, s.Pending())
	}
}

// wideHeads is a random bf16 model (checkpoint.Synth) of forge-tiny's
// layout with DeltaNet value heads of 128 columns, as the synth-1.4b's:
// its rule runs deltaRule128 (deltarule_amd64.s), which forge-tiny's
// 32-column heads never reach; with eight of them (a 256 KB state, at
// stepParallel) a step's heads, a block's and Commit's replay run on the
// pool.
func wideHeads(t *testing.T) *model.Model {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wide")
	if err := tinylut.SynthLike(repoPath("models", "forge-tiny"), dir, map[string]any{
		"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1,
		"head_dim": 32, "linear_num_key_heads": 1, "linear_num_value_heads": 8, "linear_key_head_dim": 64,
		"linear_value_head_dim": 128,
	}, 9); err != nil {
		t.Fatal(err)
	}
	return loadModel(t, dir)
}

// TestVerifyAllocs: once a State's buffers have grown, a verify block and
// its Commit, of every row or of a prefix (replayed), allocate nothing,
// as a decode step does not (speculative decoding runs them per round).
func TestVerifyAllocs(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	for _, act := range []model.Act{model.ActFloat32, model.ActInt8} {
		s := m.NewState()
		s.SetAct(act)
		m.Forward(s, []int{1, 2, 3, 4, 5})
		s.Reserve(1000)
		for _, T := range []int{1, 4, 8} {
			blk := make([]int, T)
			for _, keep := range []int{1, T} {
				if n := testing.AllocsPerRun(20, func() {
					if _, err := m.Verify(s, blk); err != nil {
						t.Fatal(err)
					}
					s.Commit(keep)
				}); n != 0 {
					t.Errorf("act %v: a verify block of %d rows and Commit(%d) allocate %v times", act, T, keep, n)
				}
			}
		}
	}
}
