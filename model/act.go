package model

import (
	"fmt"

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

// quantize prepares the stage's int8 inputs: one per product with int8
// kernels, shared by products whose matrices take the same input
// (lut.Int8Input.Fits), so that an input is quantized once per step.
func (st *stage) quantize() {
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
		if st.q8[i] == nil {
			m.QuantizeInput(&st.in8[i], st.x)
			st.q8[i] = &st.in8[i]
		}
	}
}
