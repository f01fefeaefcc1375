package recon

import (
	"fmt"

	"forge/lut"
	"forge/model"
	"forge/tensor"
)

// Build makes decoder layer li of a model with configuration c: vectors
// from src (the unquantized checkpoint), matrices from lin (the model's
// current Linears by checkpoint name). A quantized *lut.Matrix becomes a
// trainable Matrix (returned by name); any other Linear becomes a frozen
// Dense of its exact float32 values.
func Build(c *model.Config, li int, src model.Source, lin func(name string) model.Linear) (*Layer, map[string]*Matrix, error) {
	if li < 0 || li >= len(c.Layers) {
		return nil, nil, fmt.Errorf("recon: layer %d of %d", li, len(c.Layers))
	}
	p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{}}
	ms := map[string]*Matrix{}
	for _, t := range model.Tensors(c) {
		if t.Layer != li {
			continue
		}
		if !t.Matrix {
			v, err := src.Vector(t.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("recon: layer %d: %w", li, err)
			}
			w := make([]float64, len(v))
			for i, x := range v {
				w[i] = float64(x)
			}
			p.Vectors[t.Role] = w
			continue
		}
		l := lin(t.Name)
		if l == nil {
			return nil, nil, fmt.Errorf("recon: layer %d: no matrix %q", li, t.Name)
		}
		if lm, ok := l.(*lut.Matrix); ok && lm.Format().Quantized() {
			m, err := NewMatrix(lm)
			if err != nil {
				return nil, nil, fmt.Errorf("recon: %s: %w", t.Name, err)
			}
			ms[t.Name] = m
			p.Linears[t.Role] = m
			continue
		}
		d, err := frozen(l)
		if err != nil {
			return nil, nil, fmt.Errorf("recon: %s: %w", t.Name, err)
		}
		p.Linears[t.Role] = d
	}
	l, err := NewLayer(c, c.Layers[li], p)
	if err != nil {
		return nil, nil, fmt.Errorf("recon: layer %d: %w", li, err)
	}
	return l, ms, nil
}

// NewLayer builds a Layer of the given kind from its parameters by role.
func NewLayer(c *model.Config, kind model.LayerKind, p Params) (*Layer, error) {
	I, H := c.Intermediate, c.Hidden
	for _, r := range []struct {
		role    string
		out, in int
	}{{"gate", I, H}, {"up", I, H}, {"down", H, I}} {
		if err := checkDims(r.role, p.Linears[r.role], r.out, r.in); err != nil {
			return nil, err
		}
	}
	l := &Layer{H: H, Eps: c.Eps, Gate: p.Linears["gate"], Up: p.Linears["up"], Down: p.Linears["down"]}
	for _, n := range []struct {
		role string
		dst  *[]float64
	}{{"input_norm", &l.InNorm}, {"post_norm", &l.PostNorm}} {
		w := p.Vectors[n.role]
		if len(w) != H {
			return nil, fmt.Errorf("%s has %d values, want %d", n.role, len(w), H)
		}
		*n.dst = make([]float64, H)
		for i, v := range w {
			(*n.dst)[i] = 1 + v // offset norm (docs/model.md §3.3.1)
		}
	}
	var err error
	if kind == model.Attention {
		l.Mixer, err = NewAttention(c, p)
	} else {
		l.Mixer, err = NewDeltaNet(c, p)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// frozen returns the exact values of a Linear as a Dense without a
// gradient: rows read directly where the Linear offers them, else the
// product of the identity.
func frozen(l model.Linear) (*Dense, error) {
	out, in := l.Dims()
	w := make([]float64, out*in)
	switch v := l.(type) {
	case *lut.Matrix:
		if v.Parts().Rotation != nil {
			return nil, fmt.Errorf("a %s matrix with a rotation is not supported", v.Format())
		}
		m := tensor.New(out, in)
		v.Dequantize(m)
		for i, x := range m.Data {
			w[i] = float64(x)
		}
	case model.Rower:
		row := make([]float32, in)
		for o := range out {
			v.Row(o, row)
			for j, x := range row {
				w[o*in+j] = float64(x)
			}
		}
	default:
		x, y := tensor.New(in, in), tensor.New(in, out)
		for i := range in {
			x.Data[i*in+i] = 1
		}
		l.Mul(y, x) // y = I·Wᵀ = Wᵀ
		for o := range out {
			for j := range in {
				w[o*in+j] = float64(y.Data[j*out+o])
			}
		}
	}
	return &Dense{Out: out, In: in, W: w}, nil
}
