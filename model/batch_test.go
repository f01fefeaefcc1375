package model_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"forge/model"
)

// TestStepBatch: a StepBatch of States at different positions, with
// different histories, gives each row the logits of that State's own
// decode step bit for bit and leaves each State as its step would (conv
// and recurrent states, KV caches), for 12 steps of batches of 1–5
// States (some leaving and joining), with every verify subject (bf16,
// LUT4 with float32 and int8 activations, both KV caches).
func TestStepBatch(t *testing.T) {
	for _, sub := range verifySubjects(t) {
		t.Run(sub.name, func(t *testing.T) {
			m := sub.m
			V := m.Config().Vocab
			r := rand.New(rand.NewPCG(21, uint64(len(sub.name))))
			const n = 5
			batched, alone := make([]*model.State, n), make([]*model.State, n)
			for i := range n {
				prompt := randTokens(r, 3+17*i, V)
				for _, ss := range []*[]*model.State{&batched, &alone} {
					s := m.NewStateKV(sub.kv)
					s.SetAct(sub.act)
					m.Forward(s, prompt)
					(*ss)[i] = s
				}
			}
			b := m.NewBatch()
			for step := range 12 {
				var members []int
				for i := range n {
					if (step+i)%4 != 0 { // members come and go
						members = append(members, i)
					}
				}
				states, toks := make([]*model.State, len(members)), make([]int, len(members))
				for k, i := range members {
					states[k], toks[k] = batched[i], r.IntN(V)
				}
				lg, err := m.StepBatch(b, states, toks)
				if err != nil {
					t.Fatal(err)
				}
				for k, i := range members {
					want := m.Forward(alone[i], []int{toks[k]}).Row(0)
					if !bitsEqual(lg.Row(k), want) {
						t.Fatalf("step %d: batch row %d (state %d) differs from its decode step", step, k, i)
					}
					if !sameState(stateOf(m, batched[i]), stateOf(m, alone[i])) {
						t.Fatalf("step %d: state %d after the batch differs from its decode step's", step, i)
					}
				}
			}
		})
	}
}

// TestStepBatchMisuse: a State twice, States of different KV formats, a
// full context and tokens outside the vocabulary are errors that change
// nothing; a State with pending verify rows panics.
func TestStepBatchMisuse(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	b := m.NewBatch()
	a, c := m.NewState(), m.NewStateKV(model.KVInt8)
	m.Forward(a, []int{1, 2})
	m.Forward(c, []int{1, 2})
	for _, tc := range []struct {
		states []*model.State
		toks   []int
		want   string
	}{
		{[]*model.State{a, a}, []int{1, 2}, "twice"},
		{[]*model.State{a, c}, []int{1, 2}, "KV format"},
		{[]*model.State{a}, []int{m.Config().Vocab}, "vocabulary"},
		{[]*model.State{a}, []int{1, 2}, "2 tokens"},
	} {
		_, err := m.StepBatch(b, tc.states, tc.toks)
		if err == nil || !strings.Contains(err.Error(), tc.want) || a.Pos() != 2 || c.Pos() != 2 {
			t.Errorf("%s: %v (positions %d, %d)", tc.want, err, a.Pos(), c.Pos())
		}
	}
	full := m.NewState()
	m.Forward(full, make([]int, m.Config().MaxContext))
	if _, err := m.StepBatch(b, []*model.State{a, full}, []int{1, 2}); err == nil || a.Pos() != 2 {
		t.Errorf("a full context: %v", err)
	}
	if _, err := m.Verify(a, []int{3}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a pending state did not panic")
			}
		}()
		m.StepBatch(b, []*model.State{a}, []int{1})
	}()
}
