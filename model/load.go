package model

import (
	"fmt"
	"math"
	"strconv"
)

// Load reads a configuration and every weight from src and checks each
// shape against the configuration. Errors name the tensor or config field.
func Load(src Source) (*Model, error) {
	c, err := src.Config()
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	l := loader{src: src, c: &c}
	m := &Model{cfg: c, rope: newRope(&c)}
	emb := l.linear("embed_tokens.weight", c.Vocab, c.Hidden)
	if emb != nil {
		r, ok := emb.(Rower)
		if !ok {
			return nil, fmt.Errorf("embed_tokens.weight: %T cannot be read by rows", emb)
		}
		m.embed = r
	}
	m.norm = l.offsetNorm("norm.weight", c.Hidden)
	if c.Tied {
		m.head = emb
	} else {
		m.head = l.linear("lm_head.weight", c.Vocab, c.Hidden)
	}
	m.layers = make([]layer, len(c.Layers))
	for i, kind := range c.Layers {
		m.layers[i] = l.layer(i, kind)
	}
	if l.err != nil {
		return nil, l.err
	}
	return m, nil
}

// loader collects the first error so that Load reads top to bottom.
type loader struct {
	src Source
	c   *Config
	err error
}

func (l *loader) linear(name string, out, in int) Linear {
	if l.err != nil {
		return nil
	}
	lin, err := l.src.Linear(name)
	if err != nil {
		l.err = err
		return nil
	}
	if o, i := lin.Dims(); o != out || i != in {
		l.err = fmt.Errorf("tensor %q: shape [%d %d], want [%d %d]", name, o, i, out, in)
		return nil
	}
	return lin
}

func (l *loader) vector(name string, n int) []float32 {
	if l.err != nil {
		return nil
	}
	v, err := l.src.Vector(name)
	if err != nil {
		l.err = err
		return nil
	}
	if len(v) != n {
		l.err = fmt.Errorf("tensor %q: %d elements, want %d", name, len(v), n)
		return nil
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			l.err = fmt.Errorf("tensor %q: element %d is %v", name, i, x)
			return nil
		}
	}
	return v
}

// offsetNorm loads a zero-centred norm weight and returns its effective
// scale 1+w, computed in fp32 (docs/model.md §3.3.1).
func (l *loader) offsetNorm(name string, n int) []float32 {
	v := l.vector(name, n)
	for i := range v {
		v[i] = 1 + v[i]
	}
	return v
}

func (l *loader) layer(i int, kind LayerKind) layer {
	c := l.c
	p := "layers." + strconv.Itoa(i) + "."
	L := layer{
		kind:     kind,
		inNorm:   l.offsetNorm(p+"input_layernorm.weight", c.Hidden),
		postNorm: l.offsetNorm(p+"post_attention_layernorm.weight", c.Hidden),
		gate:     l.linear(p+"mlp.gate_proj.weight", c.Intermediate, c.Hidden),
		up:       l.linear(p+"mlp.up_proj.weight", c.Intermediate, c.Hidden),
		down:     l.linear(p+"mlp.down_proj.weight", c.Hidden, c.Intermediate),
	}
	if kind == Attention {
		D := c.HeadDim
		L.attn = &attention{
			q:     l.linear(p+"self_attn.q_proj.weight", 2*c.Heads*D, c.Hidden),
			k:     l.linear(p+"self_attn.k_proj.weight", c.KVHeads*D, c.Hidden),
			v:     l.linear(p+"self_attn.v_proj.weight", c.KVHeads*D, c.Hidden),
			o:     l.linear(p+"self_attn.o_proj.weight", c.Hidden, c.Heads*D),
			qNorm: l.offsetNorm(p+"self_attn.q_norm.weight", D),
			kNorm: l.offsetNorm(p+"self_attn.k_norm.weight", D),
		}
		return L
	}
	p += "linear_attn."
	d := &deltaNet{
		qkv:    l.linear(p+"in_proj_qkv.weight", c.ConvDim(), c.Hidden),
		z:      l.linear(p+"in_proj_z.weight", c.ValueTotal(), c.Hidden),
		a:      l.linear(p+"in_proj_a.weight", c.ValueHeads, c.Hidden),
		b:      l.linear(p+"in_proj_b.weight", c.ValueHeads, c.Hidden),
		out:    l.linear(p+"out_proj.weight", c.Hidden, c.ValueTotal()),
		conv:   l.vector(p+"conv1d.weight", c.ConvDim()*c.ConvKernel), // [convDim, 1, K] squeezed
		dtBias: l.vector(p+"dt_bias", c.ValueHeads),
		normW:  l.vector(p+"norm.weight", c.ValueDim),
	}
	// A_log stores ln A; the decay rate is A = exp(A_log) (docs/model.md §3.3.2).
	aLog := l.vector(p+"A_log", c.ValueHeads)
	d.rate = make([]float64, len(aLog))
	for h, v := range aLog {
		d.rate[h] = math.Exp(float64(v))
	}
	L.gdn = d
	return L
}
