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
	m.timed = m.WeightBytes() < modeBytes
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

// layer loads decoder layer i from the entries of the tensor table for its
// kind (tensors.go): matrices into their slots, vectors by role.
func (l *loader) layer(i int, kind LayerKind) layer {
	L := layer{kind: kind}
	if kind == Attention {
		L.attn = &attention{}
	} else {
		L.gdn = &deltaNet{}
	}
	p := "layers." + strconv.Itoa(i) + "."
	for _, group := range layerEntries(kind) {
		for _, e := range group {
			name, shape := p+e.suffix, e.shape(l.c)
			if e.matrix {
				*L.slot(e.role) = l.linear(name, shape[0], shape[1])
				continue
			}
			n := 1
			for _, d := range shape {
				n *= d
			}
			l.layerVector(&L, e.role, name, n)
		}
	}
	return L
}

// transposeTaps turns the stored conv taps [convDim][K] into the
// deltaNet's layout [K][convDim].
func transposeTaps(w []float32, K int) []float32 {
	if w == nil || K <= 0 {
		return w
	}
	cd := len(w) / K
	t := make([]float32, len(w))
	for ch := range cd {
		for j := range K {
			t[j*cd+ch] = w[ch*K+j]
		}
	}
	return t
}

// layerVector loads a layer's vector of role into its place.
func (l *loader) layerVector(L *layer, role, name string, n int) {
	switch role {
	case "input_norm":
		L.inNorm = l.offsetNorm(name, n)
	case "post_norm":
		L.postNorm = l.offsetNorm(name, n)
	case "q_norm":
		L.attn.qNorm = l.offsetNorm(name, n)
	case "k_norm":
		L.attn.kNorm = l.offsetNorm(name, n)
	case "conv":
		L.gdn.conv = transposeTaps(l.vector(name, n), l.c.ConvKernel) // stored [convDim, 1, K]
	case "dt_bias":
		L.gdn.dtBias = l.vector(name, n)
	case "gated_norm":
		L.gdn.normW = l.vector(name, n)
	case "A_log":
		// A_log stores ln A; the decay rate is A = exp(A_log) (docs/model.md §3.3.2).
		aLog := l.vector(name, n)
		L.gdn.rate = make([]float64, len(aLog))
		for h, v := range aLog {
			L.gdn.rate[h] = math.Exp(float64(v))
		}
	default:
		panic("model: the tensor table has a vector role the loader does not know: " + role)
	}
}
