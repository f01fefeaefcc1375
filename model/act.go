package model

import (
	"fmt"
	"runtime"

	"forge/lut"
)

// Act is how a State multiplies activations by quantized weights.
type Act int

const (
	// ActFloat32 multiplies float32 activations (lut.Matrix.Mul): the
	// exact product of the stored weights, to float32 rounding.
	ActFloat32 Act = iota
	// ActInt8 quantizes the activations of steps to int8 in groups of 32
	// columns for matrices with int8 kernels (lut.Int8Input: 4-bit scalar
	// and 2x16 LUTs), as llama.cpp multiplies its quantized weights:
	// every step where the CPU has fast int8 kernels (lut.Int8Prefill: on
	// the synth-1.4b they prefill 1.36–2.9× faster than the float32
	// kernels, BENCHMARKS.md), else steps of at most Int8Rows rows
	// (decode steps, verify blocks), longer prefills staying float32. A
	// row's result does not depend on the other rows of its step.
	ActInt8
	// ActInt8All is ActInt8 for steps of any length, prefill included:
	// what forge eval --act int8 scores, so that the KL it reports is
	// that of decoding with int8 activations.
	ActInt8All
)

// Int8Rows is the longest step ActInt8 runs with int8 activations where
// lut.Int8Prefill is false.
const Int8Rows = 16

// String is the name ParseAct reads (ActInt8All prints as int8-all).
func (a Act) String() string {
	switch a {
	case ActInt8:
		return "int8"
	case ActInt8All:
		return "int8-all"
	}
	return "f32"
}

// ParseAct reads an activation precision: "f32" (also "fp32" or ""),
// "int8", or "auto": int8 where this build and CPU have int8 kernels
// (lut.Int8Kernels), f32 elsewhere, since the portable int8 twin decodes
// at about half the portable float32 kernels' speed.
func ParseAct(s string) (Act, error) {
	switch s {
	case "", "f32", "fp32":
		return ActFloat32, nil
	case "int8":
		return ActInt8, nil
	case "auto":
		if lut.Int8Kernels() {
			return ActInt8, nil
		}
		return ActFloat32, nil
	}
	return 0, fmt.Errorf("activation precision %q: want auto, f32 or int8", s)
}

// ResolveAct is the precision m's steps run with when a is asked for:
// ActFloat32 where none of its products (the head included) has int8
// kernels (a checkpoint's bf16 weights, say), since int8 activations only
// ever meet such matrices (stage.quantize); a otherwise. Reports say this
// one, not what was asked.
func (m *Model) ResolveAct(a Act) Act {
	if a == ActFloat32 {
		return a
	}
	for _, l := range append(m.products(), m.head) {
		if lm, ok := l.(*lut.Matrix); ok && lm.Int8Activations() {
			return a
		}
	}
	return ActFloat32
}

// SetAct sets how the state's steps multiply activations by quantized
// weights from the next step on.
func (s *State) SetAct(a Act) { s.act = a }

// Act returns the state's activation precision.
func (s *State) Act() Act { return s.act }

// int8Step reports whether a step of rows rows runs with int8 activations.
func (s *State) int8Step(rows int) bool {
	return s.act == ActInt8All || s.act == ActInt8 && (rows <= Int8Rows || lut.Int8Prefill())
}

// quantSplit is the least elements of a stage's input (all its rows) whose
// rows are quantized in the stage's chunks, on every core its products
// run on: a verify block of the synth-1.4b (8 × 2048 and more), not
// forge-tiny's (8 × 256 or 768).
var quantSplit = 16 << 10

// quantize prepares the stage's int8 inputs: one per product with int8
// kernels, shared by products whose matrices take the same input
// (lut.Int8Input.Fits), so that an input is quantized once per step. It
// quantizes each at once unless par, where it leaves their rows to the
// stage's chunks (quantizeRows). (Preparing every input first and
// quantizing after cost forge-tiny-draft's decode step 18.3 → 20.8 µs.)
func (st *stage) quantize(par bool) {
	st.nq = 0
	for i := range st.n {
		st.q8[i] = nil
		m, ok := st.lin[i].(*lut.Matrix)
		if !ok || !m.Int8Activations() {
			continue
		}
		for k := range i {
			if q := st.q8[k]; q != nil && q.Fits(m) {
				st.q8[i] = q
				break
			}
		}
		if st.q8[i] != nil {
			continue
		}
		q := &st.in8[i]
		st.q8[i] = q
		if !par {
			m.QuantizeInput(q, st.x)
			continue
		}
		m.PrepareInput(q, st.x)
		st.qin[st.nq] = q
		st.nq++
	}
	if par {
		st.qnext.Store(0)
		st.qdone.Store(0)
		st.qtotal = int32(st.nq * st.x.Rows)
	}
}

// quantizeRows is the start of each of a stage's chunks when quantize
// left the rows to them: the goroutine quantizes rows (one input's row
// at a time, claimed from a shared count) until none is left, then waits
// until every row is done, as the products read all of them. A verify
// block of eight rows of the synth-1.4b quantized ~1.5 ms of its ~35 on
// one core while the other waited; a pool call of its own per input cost
// as much as it saved (a hand-off each).
func (st *stage) quantizeRows() {
	T := int32(st.x.Rows)
	for {
		i := st.qnext.Add(1) - 1
		if i >= st.qtotal {
			break
		}
		t := int(i % T)
		st.qin[i/T].QuantizeRows(t, t+1)
		st.qdone.Add(1)
	}
	for n := 1; st.qdone.Load() < st.qtotal; n++ {
		if n%256 == 0 {
			runtime.Gosched()
		}
	}
}
