package model

import "forge/tensor"

// Slot returns the place where the Model keeps the Linear loaded from the
// checkpoint tensor name (the names Load asks its Source for, such as
// "layers.3.mlp.gate_proj.weight" or "lm_head.weight"), or nil if the
// model has no such Linear. Storing through it swaps the matrix the model
// multiplies by: calibration wraps slots to record their inputs and
// replaces them with quantized matrices layer by layer. The new Linear must
// have the same Dims. Swapping is not safe while any Forward runs.
//
// The embedding table (read by rows, not multiplied) has no slot; with
// tied embeddings the head slot still holds the embedding matrix, and
// storing into it unties them.
func (m *Model) Slot(name string) *Linear {
	t, ok := Lookup(name)
	switch {
	case !ok || !t.Matrix:
		return nil
	case t.Role == "head":
		return &m.head
	case t.Layer < 0 || t.Layer >= len(m.layers):
		return nil
	}
	return m.layers[t.Layer].slot(t.Role)
}

// slot returns the field of L holding the matrix of role (a TensorSpec
// role), or nil when a layer of L's kind has no such matrix.
func (L *layer) slot(role string) *Linear {
	switch role {
	case "gate":
		return &L.gate
	case "up":
		return &L.up
	case "down":
		return &L.down
	}
	if a := L.attn; a != nil {
		switch role {
		case "q":
			return &a.q
		case "k":
			return &a.k
		case "v":
			return &a.v
		case "o":
			return &a.o
		}
	}
	if d := L.gdn; d != nil {
		switch role {
		case "qkv":
			return &d.qkv
		case "z":
			return &d.z
		case "a":
			return &d.a
		case "b":
			return &d.b
		case "out":
			return &d.out
		}
	}
	return nil
}

// Norm writes to dst [T, H] the RMS norm of the hidden rows x [T, H] that
// feeds layer li's mixer (li ≥ 0: input_layernorm) or, for li = −1, the
// head (the final norm): the input the layer's mixer input projections or
// the head multiply by. Calibration reads it without running the mixer.
func (m *Model) Norm(li int, dst, x *tensor.Matrix) {
	scale := m.norm
	if li >= 0 {
		scale = m.layers[li].inNorm
	}
	dst.Resize(x.Rows, x.Cols)
	for t := range x.Rows {
		rmsNorm(dst.Row(t), x.Row(t), scale, m.cfg.Eps)
	}
}
