package ane

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"forge/lut"
	"forge/model"
	"forge/tensor"
)

// Load loads the model of src as the Neural Engine would run it: every
// Linear decorated (decorate), every vector weight rounded to fp16, and
// a new Emulator with opt that the caller sets on each State it runs
// (State.SetNumerics). The weights are src's own — a bundle's fp16
// codebooks, scales and factors are already what the device holds — so
// the model differs from model.Load(src) only in its arithmetic.
func Load(src model.Source, opt Options) (*model.Model, *Emulator, error) {
	c, err := src.Config()
	if err != nil {
		return nil, nil, err
	}
	em := NewEmulator(len(c.Layers), opt)
	m, err := model.Load(deviceSource{src: src, em: em})
	if err != nil {
		return nil, nil, err
	}
	return m, em, nil
}

// deviceSource decorates a model.Source for Load.
type deviceSource struct {
	src model.Source
	em  *Emulator
}

func (s deviceSource) Config() (model.Config, error) { return s.src.Config() }

// Vector rounds the weights the device holds as fp16 constants (norms,
// conv taps, dt_bias); A_log stays as read, since the forward uses only
// exp(A_log), which the device would hold instead.
func (s deviceSource) Vector(name string) ([]float32, error) {
	v, err := s.src.Vector(name)
	if err != nil || strings.HasSuffix(name, "A_log") {
		return v, err
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = Round(x)
	}
	return out, nil
}

func (s deviceSource) Linear(name string) (model.Linear, error) {
	l, err := s.src.Linear(name)
	if err != nil {
		return nil, err
	}
	d, err := decorate(l, layerOf(name), s.em)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return d, nil
}

// layerOf returns N of a name "layers.N.…", or −1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "layers.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '.'))])
	if err != nil {
		return -1
	}
	return n
}

// linear runs a product as the device would (docs/ane.md §1.1):
//
//	x̂ = x (already fp16: the forward stores every Linear's input); x̂′ = fp16(x̂·M) (the rotation, a grouped conv)
//	LUT formats: ŷ = fp16(s ⊙ fp16(conv(x̂′, book[idx])))   (the scale after the conv)
//	others:      ŷ = fp16(x̂′·Wᵀ)
//	low rank:    ŷ ← fp16(ŷ + fp16(fp16(x̂′·Bᵀ)·Aᵀ))
//
// each conv accumulating in fp32 (an assumption: Apple does not document
// the ANE's accumulator) with fp16 inputs and output. Every rounding of
// an output is counted under model.SiteMatmul.
type linear struct {
	li       int
	em       *Emulator
	inner    model.Linear // the product without rotation and factors (with its scale)
	rot      lut.Rotation
	scale    []float32     // [out] the per-channel scales applied after the conv (LUT formats), nil otherwise
	lrA, lrB *tensor.Dense // [out, r], [r, in]
	out, in  int
	bufs     sync.Pool // *linearBufs
}

type linearBufs struct{ xr, t, l tensor.Matrix }

// rowLinear is a linear whose rows can be read (the embedding table).
type rowLinear struct {
	*linear
	rows model.Rower
}

// Row widens row i into dst and rounds it (the host's fp16 table).
func (r rowLinear) Row(i int, dst []float32) {
	r.rows.Row(i, dst)
	for j, v := range dst {
		dst[j] = Round(v)
	}
}

func decorate(l model.Linear, li int, em *Emulator) (model.Linear, error) {
	out, in := l.Dims()
	d := &linear{li: li, em: em, inner: l, out: out, in: in}
	if m, ok := l.(*lut.Matrix); ok {
		p := m.Parts()
		f := m.Format()
		if p.Rotation != nil || p.LowRankA != nil {
			d.rot = p.Rotation
			if r := m.Rank(); r > 0 {
				d.lrA = tensor.DenseF16(out, r, p.LowRankA)
				d.lrB = tensor.DenseF16(r, in, p.LowRankB)
			}
			p.Rotation, p.LowRankA, p.LowRankB = nil, nil, nil
			inner, err := lut.New(f, out, in, p)
			if err != nil {
				return nil, err
			}
			d.inner = inner
		}
		if f.Kind == lut.Scalar || f.Kind == lut.Vector {
			d.scale = make([]float32, out)
			for o, h := range p.Scale {
				d.scale[o] = tensor.F16ToF32(h)
			}
		}
	}
	if r, ok := l.(model.Rower); ok {
		return rowLinear{linear: d, rows: r}, nil
	}
	return d, nil
}

func (d *linear) Dims() (out, in int) { return d.out, d.in }

func (d *linear) Mul(dst, x *tensor.Matrix) {
	b, _ := d.bufs.Get().(*linearBufs)
	if b == nil {
		b = new(linearBufs)
	}
	defer d.bufs.Put(b)
	T := x.Rows
	var st Stat
	xin := x // a tensor the forward has stored (rounded) already
	if d.rot != nil {
		b.xr.Resize(T, d.in)
		d.rot.Rotate(&b.xr, x)
		roundInto(b.xr.Data, &st)
		xin = &b.xr
	}
	d.inner.Mul(dst, xin)
	if d.scale != nil {
		for t := range T {
			y := dst.Row(t)
			for o, s := range d.scale {
				if s != 0 {
					y[o] /= s // the conv's output before the scale, to fp32 rounding
				}
			}
			roundInto(y, &st)
			for o, s := range d.scale {
				y[o] *= s
			}
		}
	}
	roundInto(dst.Data[:T*d.out], &st)
	if d.lrA != nil {
		r, _ := d.lrB.Dims()
		b.t.Resize(T, r)
		d.lrB.Mul(&b.t, xin)
		roundInto(b.t.Data, &st)
		b.l.Resize(T, d.out)
		d.lrA.Mul(&b.l, &b.t)
		roundInto(b.l.Data, &st)
		for i, v := range b.l.Data {
			dst.Data[i] += v
		}
		roundInto(dst.Data[:T*d.out], &st)
	}
	d.em.count(model.SiteMatmul, d.li, st)
}
