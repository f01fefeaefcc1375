package model

import (
	"strconv"
	"strings"

	"forge/tensor"
)

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
	if name == "lm_head.weight" {
		return &m.head
	}
	rest, ok := strings.CutPrefix(name, "layers.")
	if !ok {
		return nil
	}
	num, rest, ok := strings.Cut(rest, ".")
	li, err := strconv.Atoi(num)
	if !ok || err != nil || li < 0 || li >= len(m.layers) || strconv.Itoa(li) != num {
		return nil
	}
	L := &m.layers[li]
	switch rest {
	case "mlp.gate_proj.weight":
		return &L.gate
	case "mlp.up_proj.weight":
		return &L.up
	case "mlp.down_proj.weight":
		return &L.down
	}
	if a := L.attn; a != nil {
		switch rest {
		case "self_attn.q_proj.weight":
			return &a.q
		case "self_attn.k_proj.weight":
			return &a.k
		case "self_attn.v_proj.weight":
			return &a.v
		case "self_attn.o_proj.weight":
			return &a.o
		}
	}
	if d := L.gdn; d != nil {
		switch rest {
		case "linear_attn.in_proj_qkv.weight":
			return &d.qkv
		case "linear_attn.in_proj_z.weight":
			return &d.z
		case "linear_attn.in_proj_a.weight":
			return &d.a
		case "linear_attn.in_proj_b.weight":
			return &d.b
		case "linear_attn.out_proj.weight":
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
