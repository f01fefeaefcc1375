package recon

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/model"
	"forge/tensor"
)

// deltaNetTestConfig is a small DeltaNet shape: 2 key heads of 4 serving 4
// value heads of 4 (r_v = 2, so the grouping is exercised), 4 conv taps.
func deltaNetTestConfig() *model.Config {
	return &model.Config{
		Hidden: 16, KeyHeads: 2, ValueHeads: 4, KeyDim: 4, ValueDim: 4, ConvKernel: 4, Eps: 1e-6,
	}
}

// deltaNetRandom returns a DeltaNet of c with random Dense weights whose
// gates sit mid-range for inputs uniform in [−1, 1): projections of O(1),
// α = e^g around 0.5–0.9 (A ≈ 0.5, dt_bias small), β = σ(b) away from 0
// and 1, conv taps and gated-norm weights O(1).
func deltaNetRandom(t *testing.T, rng *rand.Rand, c *model.Config) (*DeltaNet, map[string]*Dense) {
	t.Helper()
	H, cd, vt, hv := c.Hidden, c.ConvDim(), c.ValueTotal(), c.ValueHeads
	dense := map[string]*Dense{
		"qkv": NewDense(cd, H, fdRand(rng, cd*H, 0.6)),
		"z":   NewDense(vt, H, fdRand(rng, vt*H, 0.6)),
		"a":   NewDense(hv, H, fdRand(rng, hv*H, 0.4)),
		"b":   NewDense(hv, H, fdRand(rng, hv*H, 0.5)),
		"out": NewDense(H, vt, fdRand(rng, H*vt, 0.5)),
	}
	p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{
		"conv":       fdRand(rng, cd*c.ConvKernel, 0.8),
		"A_log":      fdRand(rng, hv, 0.3),
		"dt_bias":    fdRand(rng, hv, 0.5),
		"gated_norm": fdRand(rng, c.ValueDim, 0.2),
	}}
	for h := range p.Vectors["A_log"] {
		p.Vectors["A_log"][h] += math.Log(0.5)
	}
	for j := range p.Vectors["gated_norm"] {
		p.Vectors["gated_norm"][j] += 1
	}
	for role, l := range dense {
		p.Linears[role] = l
	}
	d, err := NewDeltaNet(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return d, dense
}

// TestDeltaNetGradients checks dL/du and dL/dW of all five Linears against
// central differences of L = Σ y⊙r in float64, at T = 1 (one segment of
// one token), T = 7 (segments of 3, 3, 1: the recomputation from
// checkpoints and a partial last segment) and T = 12.
//
// Tolerance: with step h = 1e-5 (relative, floor 1), the central
// difference errs by the truncation h²·|L‴|/6 ≈ 1e-11 plus the rounding
// ≈ 1e-16·|L|/h ≈ 1e-11·|L| with |L| = O(1–10); each entry's error is
// taken relative to max(|analytic|, |numeric|, 1e-2·max|analytic| of its
// tensor), so a limit of 1e-6 leaves two to three orders of margin, while
// any wrong term of the backward shows up as O(1).
func TestDeltaNetGradients(t *testing.T) {
	const (
		step = 1e-5
		tol  = 1e-6
	)
	c := deltaNetTestConfig()
	for _, T := range []int{1, 7, 12} {
		rng := rand.New(rand.NewPCG(uint64(T), 7))
		d, dense := deltaNetRandom(t, rng, c)
		u := fdRand(rng, T*c.Hidden, 1)
		r := fdRand(rng, T*c.Hidden, 1)
		loss := func() float64 {
			y, _ := d.Forward(u, T)
			return fdDot(y, r)
		}

		// Gates mid-range, so that the check is meaningful.
		_, tape := d.Forward(u, T)
		tp := tape.(*deltaTape)
		for _, g := range []struct {
			name string
			v    []float64
		}{{"alpha", tp.alpha}, {"beta", tp.beta}} {
			lo, hi := minMax(g.v)
			if lo < 0.05 || hi > 0.97 {
				t.Fatalf("T=%d: %s in [%.3g, %.3g]: saturated test gates", T, g.name, lo, hi)
			}
		}

		du := d.Backward(tape, r)
		check := func(name string, x, grad []float64) {
			t.Helper()
			floor := 1e-2 * fdMaxAbs(grad)
			if floor == 0 {
				floor = 1 // an exactly zero gradient (dL/dW_a at T = 1: α scales S = 0): absolute check
			}
			worst := 0.0
			for i := range x {
				n := fdCentral(loss, x, i, step)
				worst = math.Max(worst, fdErr(grad[i], n, floor))
			}
			t.Logf("T=%d %-4s max|∂| %.3g  max rel err %.2e", T, name, fdMaxAbs(grad), worst)
			if !(worst <= tol) {
				t.Errorf("T=%d: dL/d%s: relative error %.3g > %g", T, name, worst, tol)
			}
		}
		check("u", u, du)
		for _, role := range []string{"qkv", "z", "a", "b", "out"} {
			check(role, dense[role].W, dense[role].Grad)
		}
	}
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// TestDeltaNetBackwardAccumulates checks that a second Backward of the same
// tape adds the same gradients again (Dense.Grad doubles, up to rounding)
// and returns the same dL/du.
func TestDeltaNetBackwardAccumulates(t *testing.T) {
	c := deltaNetTestConfig()
	rng := rand.New(rand.NewPCG(3, 4))
	d, dense := deltaNetRandom(t, rng, c)
	const T = 5
	u := fdRand(rng, T*c.Hidden, 1)
	dy := fdRand(rng, T*c.Hidden, 1)
	_, tape := d.Forward(u, T)
	du1 := d.Backward(tape, dy)
	once := map[string][]float64{}
	for role, l := range dense {
		once[role] = append([]float64(nil), l.Grad...)
	}
	du2 := d.Backward(tape, dy)
	for i := range du1 {
		if du1[i] != du2[i] {
			t.Fatalf("du[%d]: %v then %v", i, du1[i], du2[i])
		}
	}
	for role, l := range dense {
		if fdMaxAbs(once[role]) == 0 {
			t.Errorf("%s: zero gradient", role)
		}
		for i, g := range l.Grad {
			if math.Abs(g-2*once[role][i]) > 1e-12*math.Abs(g) { // gemm's β = 1 adds in its own order
				t.Fatalf("%s: Grad[%d] = %v after two Backwards, want 2×%v", role, i, g, once[role][i])
			}
		}
	}
}

// TestNewDeltaNetErrors checks that a missing or misshapen role is refused
// with an error naming it.
func TestNewDeltaNetErrors(t *testing.T) {
	c := deltaNetTestConfig()
	rng := rand.New(rand.NewPCG(5, 6))
	base := func() Params {
		_, dense := deltaNetRandom(t, rng, c)
		p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{
			"conv": make([]float64, c.ConvDim()*c.ConvKernel), "A_log": make([]float64, c.ValueHeads),
			"dt_bias": make([]float64, c.ValueHeads), "gated_norm": make([]float64, c.ValueDim),
		}}
		for role, l := range dense {
			p.Linears[role] = l
		}
		return p
	}
	if _, err := NewDeltaNet(c, base()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(p Params)
	}{
		{"qkv", func(p Params) { delete(p.Linears, "qkv") }},
		{"out", func(p Params) {
			p.Linears["out"] = NewDense(c.Hidden, c.Hidden+1, make([]float64, c.Hidden*(c.Hidden+1)))
		}},
		{"a", func(p Params) { p.Linears["a"] = p.Linears["b"].(*Dense).transposedForTest() }},
		{"conv", func(p Params) { p.Vectors["conv"] = p.Vectors["conv"][1:] }},
		{"A_log", func(p Params) { delete(p.Vectors, "A_log") }},
		{"gated_norm", func(p Params) { p.Vectors["gated_norm"] = make([]float64, c.ValueDim+1) }},
	} {
		p := base()
		tc.edit(p)
		_, err := NewDeltaNet(c, p)
		if err == nil || !strings.Contains(err.Error(), `"`+tc.name+`"`) || !strings.HasPrefix(err.Error(), "recon: deltanet: ") {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// transposedForTest returns a Dense of the transposed shape (a wrong one).
func (d *Dense) transposedForTest() *Dense {
	return NewDense(d.In, d.Out, make([]float64, d.In*d.Out))
}

// deltaNetParams reads layer li's tensors of a checkpoint as Params: the
// matrices as Dense (frozen), the vectors widened.
func deltaNetParams(t *testing.T, ck *checkpoint.Checkpoint, c *model.Config, li int) Params {
	t.Helper()
	p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{}}
	for _, s := range model.Tensors(c) {
		if s.Layer != li {
			continue
		}
		v32, err := ck.Vector(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, len(v32))
		for i, x := range v32 {
			v[i] = float64(x)
		}
		if s.Matrix {
			p.Linears[s.Role] = &Dense{Out: s.Shape[0], In: s.Shape[1], W: v}
		} else {
			p.Vectors[s.Role] = v
		}
	}
	return p
}

// TestDeltaNetMatchesModel runs layer 0 (a DeltaNet) of the trained
// models/forge-tiny on 64 tokens through the model package's fp32 forward
// (chunked delta rule) and through DeltaNet (float64, recurrent form) from
// the same normed input u, and compares the mixer outputs. The relative L2
// error, ‖y − y₃₂‖/‖y₃₂‖, is the fp32 forward's rounding (a few 1e-7 per
// operation, amplified by the gated norm, docs/model.md §11.5): ≤ 1e-4
// passes; a wrong formula (grouping, ε placement, gate, orientation of S)
// gives O(0.1–1). The rule's output o is compared too, to localise a failure.
func TestDeltaNetMatchesModel(t *testing.T) {
	ck, err := checkpoint.Open(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	const li, T = 0, 64
	if c.Layers[li] != model.DeltaNet {
		t.Fatalf("layer %d is %v", li, c.Layers[li])
	}
	tokens := make([]int, T)
	for i := range tokens {
		tokens[i] = (i*389 + 17) % c.Vocab
	}
	var x, u tensor.Matrix
	m.Embed(&x, tokens)
	m.Norm(li, &u, &x)
	obs := map[string][]float32{}
	s := m.NewState()
	s.Observe = func(name string, mt *tensor.Matrix) {
		switch name {
		case "layers.0.linear_attn.mixer_out", "layers.0.linear_attn.core_out":
			obs[name] = append([]float32(nil), mt.Data[:mt.Rows*mt.Cols]...)
		}
	}
	m.ForwardLayer(s, li, &x)

	d, err := NewDeltaNet(&c, deltaNetParams(t, ck, &c, li))
	if err != nil {
		t.Fatal(err)
	}
	u64 := make([]float64, T*c.Hidden)
	for i := range u64 {
		u64[i] = float64(u.Data[i])
	}
	y, tape := d.Forward(u64, T)
	for _, cmp := range []struct {
		name string
		got  []float64
		tol  float64
	}{
		{"layers.0.linear_attn.core_out", tape.(*deltaTape).o, 1e-4},
		{"layers.0.linear_attn.mixer_out", y, 1e-4},
	} {
		want := obs[cmp.name]
		if len(want) != len(cmp.got) {
			t.Fatalf("%s: %d values observed, want %d", cmp.name, len(want), len(cmp.got))
		}
		var num, den float64
		for i, w := range want {
			diff := cmp.got[i] - float64(w)
			num += diff * diff
			den += float64(w) * float64(w)
		}
		rel := math.Sqrt(num / den)
		t.Logf("%s: ‖·‖ %.3g, relative L2 error %.2e", cmp.name, math.Sqrt(den), rel)
		if !(rel <= cmp.tol) {
			t.Errorf("%s: relative L2 error %.3g > %g", cmp.name, rel, cmp.tol)
		}
	}
}
