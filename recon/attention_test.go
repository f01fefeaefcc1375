package recon

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"forge/model"
	"forge/source"
	"forge/tensor"
)

// attSmall is a small attention config: H = 16, Hq = 4, Hkv = 2 (two query
// heads per KV head), D = 8, R = 4 (two rotating pairs, four components
// passing through).
func attSmall() *model.Config {
	return &model.Config{Hidden: 16, Heads: 4, KVHeads: 2, HeadDim: 8, Eps: 1e-6, RopeTheta: 10000, RotaryFactor: 0.5}
}

// attRandom returns an Attention of c with random Dense Linears (entries
// in ±0.5) and norm weights (in ±0.3), and the Denses by role.
func attRandom(t *testing.T, c *model.Config, rng *rand.Rand) (*Attention, map[string]*Dense) {
	t.Helper()
	H, qw, kw := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	dense := map[string]*Dense{
		"q": NewDense(2*qw, H, fdRand(rng, 2*qw*H, 0.5)),
		"k": NewDense(kw, H, fdRand(rng, kw*H, 0.5)),
		"v": NewDense(kw, H, fdRand(rng, kw*H, 0.5)),
		"o": NewDense(H, qw, fdRand(rng, H*qw, 0.5)),
	}
	p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{
		"q_norm": fdRand(rng, c.HeadDim, 0.3),
		"k_norm": fdRand(rng, c.HeadDim, 0.3),
	}}
	for r, d := range dense {
		p.Linears[r] = d
	}
	a, err := NewAttention(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return a, dense
}

// TestAttentionGradients: dL/du and dL/dW of every Linear (q, k, v, o) of
// L = Σ y⊙r agree with central differences in float64. The weights and
// inputs are O(1), so the normed, rotated q̂ and k̂ have O(1) components and
// the scores O(1) spread: the softmax is far from one-hot (checked), so
// its backward is exercised, as are both KV heads, the gates (σ away from
// saturation) and the rotated and pass-through components.
//
// Tolerance: the central difference with h = 5e-6·max(1, |x|) (≈ ε₆₄^⅓,
// the step that balances the two errors) errs by h²·L‴/6 ≈ 1e-11
// (truncation) plus ≈ ε₆₄·|L|/h ≈ 1e-10 (rounding, |L| ≈ 5), against
// gradients of O(0.01–1); 1e-6 leaves two orders of margin (the largest
// error seen is ~6e-8) while any wrong term of the backward gives errors
// of O(1e-2) or more. The floor of the relative error, 1e-2 of the
// tensor's largest gradient, keeps the rounding of entries near zero from
// counting as a relative error. Every entry of u and of each W is checked.
func TestAttentionGradients(t *testing.T) {
	const T, step, tol = 7, 5e-6, 1e-6
	c := attSmall()
	rng := rand.New(rand.NewPCG(1, 2))
	a, dense := attRandom(t, c, rng)
	u := fdRand(rng, T*c.Hidden, 1)
	r := fdRand(rng, T*c.Hidden, 1)
	loss := func() float64 {
		y, _ := a.Forward(u, T)
		return fdDot(y, r)
	}

	y, tape := a.Forward(u, T)
	if len(y) != T*c.Hidden {
		t.Fatalf("%d outputs, want %d", len(y), T*c.Hidden)
	}
	// The softmax is not one-hot: the largest probability of rows t ≥ 2
	// averages well below 1.
	tp := tape.(*attTape)
	var pmax float64
	for h := range c.Heads {
		for tt := 2; tt < T; tt++ {
			pmax += math.Exp(attScoreMax(tp, c, h, tt)-tp.lse[h*T+tt]) / float64(c.Heads*(T-2))
		}
	}
	if pmax > 0.8 {
		t.Fatalf("mean largest attention probability %.3f: the softmax is nearly one-hot, the check would be weak", pmax)
	}
	du := a.Backward(tape, r)

	check := func(name string, x, grad []float64) {
		t.Helper()
		floor := 1e-2 * fdMaxAbs(grad)
		var worst float64
		for i := range x {
			fd := fdCentral(loss, x, i, step)
			e := fdErr(grad[i], fd, floor)
			worst = max(worst, e)
			if e > tol {
				t.Errorf("%s[%d]: analytic %.12g, central difference %.12g (relative error %.2g)", name, i, grad[i], fd, e)
			}
		}
		t.Logf("%s: max relative error %.2g over all %d entries (largest gradient %.3g)", name, worst, len(x), fdMaxAbs(grad))
	}
	check("du", u, du)
	for _, role := range []string{"q", "k", "v", "o"} {
		check("dW_"+role, dense[role].W, dense[role].Grad)
	}
}

// attScoreMax is the largest scaled score max_{τ≤t} q̂_{h,t}·k̂_{j,τ}/√D of
// a tape.
func attScoreMax(tp *attTape, c *model.Config, h, t int) float64 {
	D, T := c.HeadDim, tp.T
	j := h / (c.Heads / c.KVHeads)
	q := tp.q[(h*T+t)*D : (h*T+t+1)*D]
	mx := math.Inf(-1)
	for tau := range t + 1 {
		mx = math.Max(mx, fdDot(q, tp.k[(j*T+tau)*D:(j*T+tau+1)*D])/math.Sqrt(float64(D)))
	}
	return mx
}

// TestAttentionMatchesModel: on the trained forge-tiny (layers 3 and 7 are
// attention), the float64 mixer built from the checkpoint's weights
// reproduces the model's fp32 self_attn.mixer_out for 64 tokens whose
// residual stream has run through the layers before (so the inputs are
// the real ones). The relative L2 error bound 1e-4 is fp32 rounding: the
// model rounds every product, the norms, the RoPE tables, the softmax and
// the gate to 24 bits (~6e-8 each) over sums of up to 256 terms, and
// forge-tiny shows ~3e-7; a wrong rotation pairing, frequency, scale or
// gate gives O(1e-2) or more.
func TestAttentionMatchesModel(t *testing.T) {
	m, src, err := source.Load("../models/forge-tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if n := attParity(t, m, src, 64); n != 2 {
		t.Fatalf("forge-tiny has %d attention layers, the test expects 2 (3 and 7)", n)
	}
}

// TestAttentionMatchesModelGQA: forge-tiny has one KV head, so its parity
// cannot tell the grouped GQA rule (query head h reads KV head ⌊h/r_q⌋)
// from others; this runs the same parity on a random model of one
// attention layer with Hq = 4, Hkv = 2 (tolerance as above).
func TestAttentionMatchesModelGQA(t *testing.T) {
	c := model.Config{Vocab: 64, Hidden: 32, Intermediate: 16, Layers: []model.LayerKind{model.Attention},
		Heads: 4, KVHeads: 2, HeadDim: 16, Eps: 1e-6, KeyHeads: 1, ValueHeads: 1, KeyDim: 8, ValueDim: 8,
		ConvKernel: 4, RopeTheta: 1e4, RotaryFactor: 0.5, Tied: true}
	src := attRandomSource(c, rand.New(rand.NewPCG(5, 6)))
	m, err := model.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if n := attParity(t, m, src, 40); n != 1 {
		t.Fatalf("%d attention layers, want 1", n)
	}
}

// attParity runs T tokens through m layer by layer (ForwardLayer on one
// State) and, at each attention layer, compares the model's fp32
// self_attn.mixer_out with the float64 Attention built from the same
// weights on the same normed input (relative L2 error ≤ 1e-4). It returns
// the number of attention layers checked.
func attParity(t *testing.T, m *model.Model, src model.Source, T int) int {
	t.Helper()
	c, err := src.Config() // as model.Load gets it
	if err != nil {
		t.Fatal(err)
	}
	toks := make([]int, T)
	for i := range toks {
		toks[i] = (i*389 + 17) % c.Vocab
	}
	var x tensor.Matrix
	m.Embed(&x, toks)
	s := m.NewState()
	var got *tensor.Matrix
	s.Observe = func(name string, o *tensor.Matrix) {
		if strings.HasSuffix(name, ".self_attn.mixer_out") {
			got = tensor.New(o.Rows, o.Cols)
			copy(got.Data, o.Data)
		}
	}
	var seen int
	for li, kind := range c.Layers {
		if kind != model.Attention {
			m.ForwardLayer(s, li, &x)
			continue
		}
		seen++
		var un tensor.Matrix
		m.Norm(li, &un, &x)
		got = nil
		m.ForwardLayer(s, li, &x)
		if got == nil {
			t.Fatalf("layer %d: no self_attn.mixer_out observed", li)
		}
		a, err := NewAttention(&c, attParams(t, m, src, li))
		if err != nil {
			t.Fatal(err)
		}
		u := make([]float64, T*c.Hidden)
		for i, v := range un.Data[:T*c.Hidden] {
			u[i] = float64(v)
		}
		y, _ := a.Forward(u, T)
		var num, den float64
		for i, v := range got.Data[:T*c.Hidden] {
			d := y[i] - float64(v)
			num += d * d
			den += float64(v) * float64(v)
		}
		rel := math.Sqrt(num / den)
		t.Logf("layer %d: relative L2 error %.3g of the float64 mixer against the fp32 model", li, rel)
		if !(rel <= 1e-4) {
			t.Errorf("layer %d: relative L2 error %.3g against the model's mixer_out, want ≤ 1e-4", li, rel)
		}
	}
	return seen
}

// attSource is a model.Source of random fp32 weights for c: matrices and
// embeddings in ±0.3, norm weights (zero-centred) in ±0.2, other vectors
// in ±0.5.
type attSource struct {
	c     model.Config
	shape map[string][]int
	data  map[string][]float32
}

func attRandomSource(c model.Config, rng *rand.Rand) *attSource {
	s := &attSource{c: c, shape: map[string][]int{}, data: map[string][]float32{}}
	for _, ts := range model.Tensors(&c) {
		sc := float32(0.5)
		switch {
		case ts.Matrix:
			sc = 0.3
		case strings.HasSuffix(ts.Role, "norm"):
			sc = 0.2
		}
		v := make([]float32, ts.Elements())
		for i := range v {
			v[i] = sc * float32(2*rng.Float64()-1)
		}
		s.shape[ts.Name], s.data[ts.Name] = ts.Shape, v
	}
	return s
}

func (s *attSource) Config() (model.Config, error) { return s.c, nil }

func (s *attSource) Vector(name string) ([]float32, error) {
	v, ok := s.data[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %s", name)
	}
	return slices.Clone(v), nil // Load turns norm weights into 1+w in place
}

func (s *attSource) Linear(name string) (model.Linear, error) {
	v, ok := s.data[name]
	if !ok || len(s.shape[name]) != 2 {
		return nil, fmt.Errorf("no matrix %s", name)
	}
	return tensor.DenseF32(s.shape[name][0], s.shape[name][1], slices.Clone(v)), nil
}

// attParams returns the mixer Params of attention layer li: the model's own
// Linears as float64 Denses (read by multiplying the identity, exact for
// any stored precision) and the checkpoint's q_norm, k_norm.
func attParams(t *testing.T, m *model.Model, src model.Source, li int) Params {
	t.Helper()
	p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{}}
	for _, role := range []string{"q", "k", "v", "o"} {
		name := fmt.Sprintf("layers.%d.self_attn.%s_proj.weight", li, role)
		slot := m.Slot(name)
		if slot == nil {
			t.Fatalf("no slot %s", name)
		}
		lin := *slot
		out, in := lin.Dims()
		id := tensor.New(in, in)
		for i := range in {
			id.Data[i*in+i] = 1
		}
		wt := tensor.New(in, out) // I·Wᵀ = Wᵀ
		lin.Mul(wt, id)
		w := make([]float64, out*in)
		for o := range out {
			for i := range in {
				w[o*in+i] = float64(wt.Data[i*out+o])
			}
		}
		p.Linears[role] = NewDense(out, in, w)
	}
	for _, role := range []string{"q_norm", "k_norm"} {
		v, err := src.Vector(fmt.Sprintf("layers.%d.self_attn.%s.weight", li, role))
		if err != nil {
			t.Fatal(err)
		}
		w := make([]float64, len(v))
		for i, x := range v {
			w[i] = float64(x)
		}
		p.Vectors[role] = w
	}
	return p
}

// TestNewAttentionErrors: a missing role, a Linear of the wrong shape or a
// norm vector of the wrong length is refused with an error naming it.
func TestNewAttentionErrors(t *testing.T) {
	c := attSmall()
	rng := rand.New(rand.NewPCG(3, 4))
	good := func() Params {
		_, d := attRandom(t, c, rng)
		p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{
			"q_norm": make([]float64, c.HeadDim), "k_norm": make([]float64, c.HeadDim)}}
		for r, l := range d {
			p.Linears[r] = l
		}
		return p
	}
	if _, err := NewAttention(c, good()); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	cases := []struct {
		name string
		edit func(p *Params)
		want string
	}{
		{"no o", func(p *Params) { delete(p.Linears, "o") }, `"o"`},
		{"k without q's width", func(p *Params) { p.Linears["k"] = NewDense(8, c.Hidden, make([]float64, 8*c.Hidden)) }, `"k" is 8x16`},
		{"q without gates", func(p *Params) {
			p.Linears["q"] = NewDense(c.Heads*c.HeadDim, c.Hidden, make([]float64, c.Heads*c.HeadDim*c.Hidden))
		}, `"q" is 32x16, want 64x16`},
		{"no k_norm", func(p *Params) { delete(p.Vectors, "k_norm") }, `"k_norm"`},
		{"short q_norm", func(p *Params) { p.Vectors["q_norm"] = make([]float64, 4) }, `"q_norm" has 4 values`},
	}
	for _, tc := range cases {
		p := good()
		tc.edit(&p)
		_, err := NewAttention(c, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "recon: attention: ") {
			t.Errorf("%s: error %v, want one containing %s", tc.name, err, tc.want)
		}
	}
	bad := *c
	bad.KVHeads = 3
	if _, err := NewAttention(&bad, good()); err == nil {
		t.Errorf("4 query heads over 3 kv heads accepted")
	}
}
