package model_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"forge/model"
	"forge/tensor"
)

// TestForwardLayer: embedding then every layer in turn through
// ForwardLayer on one fresh State reproduces, bit for bit, the residual
// stream Forward reports after each layer — for a first call and for a
// second call that continues the same State (positions, KV caches and
// DeltaNet states carried over).
func TestForwardLayer(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	r := rand.New(rand.NewPCG(3, 4))
	toks := randTokens(r, 90, m.Config().Vocab)
	n := len(m.Config().Layers)

	var want [][]float32
	sf := m.NewState()
	sf.Observe = func(name string, x *tensor.Matrix) {
		if len(name) > 10 && name[:10] == "layer_out." {
			want = append(want, slices.Clone(x.Data[:x.Rows*x.Cols]))
		}
	}
	m.Forward(sf, toks[:70])
	wantLogits := slices.Clone(m.Forward(sf, toks[70:]).Data)
	if len(want) != 2*n {
		t.Fatalf("observed %d layer outputs, want %d", len(want), 2*n)
	}

	sl := m.NewState()
	var x tensor.Matrix
	for call, part := range [][]int{toks[:70], toks[70:]} {
		m.Embed(&x, part)
		for li := range n {
			m.ForwardLayer(sl, li, &x)
			if !slices.Equal(x.Data[:x.Rows*x.Cols], want[call*n+li]) {
				t.Fatalf("call %d layer %d: ForwardLayer output differs from Forward's", call, li)
			}
		}
		if call == 1 { // the head on the last layer's output: Forward's logits
			if lg := m.Head(sl, &x); !slices.Equal(lg.Data[:lg.Rows*lg.Cols], wantLogits) {
				t.Fatalf("Head's logits differ from Forward's")
			}
		}
		sl.Advance(len(part))
	}
	if sl.Pos() != sf.Pos() {
		t.Errorf("position %d after ForwardLayer, %d after Forward", sl.Pos(), sf.Pos())
	}
}

// countLinear wraps a Linear and counts the rows it multiplies.
type countLinear struct {
	model.Linear
	rows int
}

func (c *countLinear) Mul(dst, x *tensor.Matrix) {
	c.rows += x.Rows
	c.Linear.Mul(dst, x)
}

// TestSlot: every Linear the loader reads has a slot; wrapping all of them
// leaves the logits unchanged and each sees every row; unknown names give
// nil.
func TestSlot(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	r := rand.New(rand.NewPCG(5, 6))
	toks := randTokens(r, 40, m.Config().Vocab)
	want := copyOf(m.Forward(m.NewState(), toks))

	var names []string
	for li, kind := range m.Config().Layers {
		p := "layers." + strconv.Itoa(li) + "."
		names = append(names, p+"mlp.gate_proj.weight", p+"mlp.up_proj.weight", p+"mlp.down_proj.weight")
		if kind == model.Attention {
			for _, s := range []string{"q", "k", "v", "o"} {
				names = append(names, p+"self_attn."+s+"_proj.weight")
			}
		} else {
			for _, s := range []string{"in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "out_proj"} {
				names = append(names, p+"linear_attn."+s+".weight")
			}
		}
	}
	names = append(names, "lm_head.weight")
	var wraps []*countLinear
	for _, name := range names {
		s := m.Slot(name)
		if s == nil || *s == nil {
			t.Fatalf("no slot for %q", name)
		}
		c := &countLinear{Linear: *s}
		*s = c
		wraps = append(wraps, c)
	}
	got := copyOf(m.Forward(m.NewState(), toks))
	if !slices.Equal(got, want) {
		t.Error("logits changed after wrapping every slot")
	}
	for i, c := range wraps {
		if c.rows != len(toks) {
			t.Errorf("%s multiplied %d rows, want %d", names[i], c.rows, len(toks))
		}
	}
	for _, bad := range []string{"", "layers.", "layers.99.mlp.gate_proj.weight", "layers.-1.mlp.up_proj.weight",
		"layers.01.mlp.up_proj.weight", "layers.0.mlp.gate_proj", "embed_tokens.weight", "layers.0.self_attn.q_proj.weight"} {
		if m.Slot(bad) != nil {
			t.Errorf("Slot(%q) is not nil", bad)
		}
	}
}

// recLinear records the last input it multiplied.
type recLinear struct {
	model.Linear
	x []float32
}

func (r *recLinear) Mul(dst, x *tensor.Matrix) {
	r.x = slices.Clone(x.Data[:x.Rows*x.Cols])
	r.Linear.Mul(dst, x)
}

// TestNorm: Norm(0, embeddings) is exactly what layer 0's first mixer
// projection multiplies, and Norm(−1, last layer's output) what the head
// multiplies.
func TestNorm(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	toks := randTokens(rand.New(rand.NewPCG(7, 8)), 33, m.Config().Vocab)
	first := "layers.0.linear_attn.in_proj_qkv.weight"
	if m.Config().Layers[0] == model.Attention {
		first = "layers.0.self_attn.q_proj.weight"
	}
	r0 := &recLinear{Linear: *m.Slot(first)}
	*m.Slot(first) = r0
	rh := &recLinear{Linear: *m.Slot("lm_head.weight")}
	*m.Slot("lm_head.weight") = rh
	var last []float32
	s := m.NewState()
	s.Observe = func(name string, x *tensor.Matrix) {
		if name == "layer_out."+strconv.Itoa(len(m.Config().Layers)-1) {
			last = slices.Clone(x.Data[:x.Rows*x.Cols])
		}
	}
	m.Forward(s, toks)
	var x, u tensor.Matrix
	m.Embed(&x, toks)
	m.Norm(0, &u, &x)
	if !slices.Equal(u.Data[:u.Rows*u.Cols], r0.x) {
		t.Error("Norm(0) differs from the input of layer 0's mixer")
	}
	m.Norm(-1, &u, tensor.FromSlice(len(toks), m.Config().Hidden, last))
	if !slices.Equal(u.Data[:u.Rows*u.Cols], rh.x) {
		t.Error("Norm(-1) differs from the input of the head")
	}
}
