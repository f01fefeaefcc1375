package recon

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/tensor"
)

// TestLayerGradients checks, through a whole decoder layer (both kinds),
// the gradients of L = Σ y⊙r with respect to what reconstruction trains —
// every quantized matrix's codebook values, log-scales and low-rank
// factors, the MLP's behind an online Hadamard rotation — and to the
// layer's input, against central differences in float64 (tolerance as in
// TestMatrixGradients).
func TestLayerGradients(t *testing.T) {
	for _, kind := range []model.LayerKind{model.DeltaNet, model.Attention} {
		rng := rand.New(rand.NewPCG(5, uint64(kind)))
		c := deltaNetTestConfig()
		c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.RotaryFactor, c.RopeTheta = 32, 2, 1, 8, 0.5, 10000
		H, I := c.Hidden, c.Intermediate
		quantized := func(out, in int, f lut.Format, rot bool, scale float64) *Matrix {
			m, err := NewMatrix(randomLUT(t, rng, f, out, in, 2, rot))
			if err != nil {
				t.Fatal(err)
			}
			for o := range m.s0 {
				m.s0[o] *= scale
				m.LogScale[o] = 0.1 * (2*rng.Float64() - 1)
			}
			m.Refresh()
			return m
		}
		p := Params{Linears: map[string]Linear{}, Vectors: map[string][]float64{
			"input_norm": fdRand(rng, H, 0.2), "post_norm": fdRand(rng, H, 0.2),
		}}
		var ms []*Matrix
		add := func(role string, m *Matrix) {
			p.Linears[role] = m
			ms = append(ms, m)
		}
		add("gate", quantized(I, H, lut.LUT4, true, 0.3))
		add("up", quantized(I, H, lut.LUTFormat(3, 8), true, 0.3))
		add("down", quantized(H, I, lut.Vec2x16, true, 0.2))
		if kind == model.Attention {
			add("q", quantized(2*c.Heads*c.HeadDim, H, lut.LUT4, false, 0.3))
			add("k", quantized(c.KVHeads*c.HeadDim, H, lut.INT8, false, 0.3))
			add("v", quantized(c.KVHeads*c.HeadDim, H, lut.LUT4, false, 0.3))
			add("o", quantized(H, c.Heads*c.HeadDim, lut.LUT4, false, 0.2))
			p.Vectors["q_norm"], p.Vectors["k_norm"] = fdRand(rng, c.HeadDim, 0.2), fdRand(rng, c.HeadDim, 0.2)
		} else {
			add("qkv", quantized(c.ConvDim(), H, lut.LUT4, false, 0.15))
			add("z", quantized(c.ValueTotal(), H, lut.Vec2x16, false, 0.15))
			add("out", quantized(H, c.ValueTotal(), lut.LUT4, false, 0.2))
			p.Linears["a"] = &Dense{Out: c.ValueHeads, In: H, W: fdRand(rng, c.ValueHeads*H, 0.4)}
			p.Linears["b"] = &Dense{Out: c.ValueHeads, In: H, W: fdRand(rng, c.ValueHeads*H, 0.5)}
			p.Vectors["conv"] = fdRand(rng, c.ConvDim()*c.ConvKernel, 0.8)
			p.Vectors["A_log"], p.Vectors["dt_bias"] = fdRand(rng, c.ValueHeads, 0.3), fdRand(rng, c.ValueHeads, 0.5)
			p.Vectors["gated_norm"] = fdRand(rng, c.ValueDim, 0.2)
			for i := range p.Vectors["gated_norm"] {
				p.Vectors["gated_norm"][i] += 1
			}
		}
		l, err := NewLayer(c, kind, p)
		if err != nil {
			t.Fatal(err)
		}
		const T = 6
		x := fdRand(rng, T*H, 1)
		r := fdRand(rng, T*H, 1)
		f := func() float64 {
			for _, m := range ms {
				m.Refresh()
			}
			y, _ := l.Forward(x, T)
			return fdDot(y, r)
		}
		_, tp := l.Forward(x, T)
		for _, m := range ms {
			m.ZeroGrads()
		}
		dx := l.Backward(tp, r)
		for _, m := range ms {
			m.Grads()
		}
		check := func(name string, v, g []float64) {
			floor := 1e-2 * fdMaxAbs(g)
			if floor == 0 {
				t.Fatalf("%v: %s: the gradient is zero everywhere (a broken chain)", kind, name)
			}
			for _, i := range fdSample(rng, len(v), 12) {
				num := fdCentral(f, v, i, 1e-5)
				if e := fdErr(g[i], num, floor); e > 1e-6 {
					t.Errorf("%v: d/d%s[%d] = %.10g, finite difference %.10g (rel %.2g)", kind, name, i, g[i], num, e)
				}
			}
		}
		check("x", x, dx)
		for i, m := range ms {
			name := []string{"gate", "up", "down", "mixer 0", "mixer 1", "mixer 2", "mixer 3"}[i]
			if m.Book != nil {
				check(name+" codebook", m.Book, m.GBook)
			}
			check(name+" log-scale", m.LogScale, m.GLogScale)
			check(name+" A", m.A, m.GA)
			check(name+" B", m.B, m.GB)
		}
	}
}

// tinyQuantized loads forge-tiny and replaces every quantizable matrix of
// layer li by its RTN LUT4 (MLP rotated) as a lut.Matrix.
func tinyQuantized(t *testing.T, li int) (*checkpoint.Checkpoint, *model.Model) {
	t.Helper()
	ck, err := checkpoint.Open(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	for _, ts := range model.Tensors(&c) {
		if ts.Layer != li || !ts.Quantizable {
			continue
		}
		v, err := ck.Vector(ts.Name)
		if err != nil {
			t.Fatal(err)
		}
		spec := quant.Spec{Format: lut.LUT4}
		if ts.Part == model.PartMLP {
			seed := uint64(1000 + li)
			spec.Rotation = &seed
		}
		lm, _, err := spec.Quantize(context.Background(), tensor.FromSlice(ts.Shape[0], ts.Shape[1], v), nil)
		if err != nil {
			t.Fatal(err)
		}
		*m.Slot(ts.Name) = lm
	}
	return ck, m
}

// tinyRows embeds n rows of T token ids of forge-tiny.
func tinyRows(m *model.Model, rng *rand.Rand, n, T int) []tensor.Matrix {
	xs := make([]tensor.Matrix, n)
	for i := range xs {
		ids := make([]int, T)
		for j := range ids {
			ids[j] = rng.IntN(m.Config().Vocab - 200)
		}
		m.Embed(&xs[i], ids)
	}
	return xs
}

// TestBuildMatchesModel checks that Build makes, from a model's current
// (quantized) Linears and the checkpoint's vectors, the layer the model
// runs: on forge-tiny with RTN LUT4 matrices (the MLP rotated) the float64
// layer output matches model.ForwardLayer to fp32 rounding (relative L2
// ≤ 1e-5), for a DeltaNet and an attention layer.
func TestBuildMatchesModel(t *testing.T) {
	for _, li := range []int{0, 3} {
		ck, m := tinyQuantized(t, li)
		c := m.Config()
		l, ms, err := Build(&c, li, ck, func(name string) model.Linear { return *m.Slot(name) })
		if err != nil {
			t.Fatal(err)
		}
		if want := len(quantizableIn(&c, li)); len(ms) != want {
			t.Fatalf("layer %d: %d trainable matrices, want %d", li, len(ms), want)
		}
		x := tinyRows(m, rand.New(rand.NewPCG(1, 1)), 1, 48)[0]
		in := widenTest(x.Data)
		s := m.NewState()
		m.ForwardLayer(s, li, &x)
		y, _ := l.Forward(in, x.Rows)
		var num, den float64
		for i, v := range y {
			d := v - float64(x.Data[i])
			num += d * d
			den += v * v
		}
		if e := math.Sqrt(num / den); e > 1e-5 {
			t.Errorf("layer %d: relative L2 error %.3g against model.ForwardLayer", li, e)
		}
	}
}

func quantizableIn(c *model.Config, li int) []string {
	var n []string
	for _, ts := range model.Tensors(c) {
		if ts.Layer == li && ts.Quantizable {
			n = append(n, ts.Name)
		}
	}
	return n
}

func widenTest(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

// fitSetup makes forge-tiny layer li with RTN LUT4 matrices and rows
// whose targets are the unquantized layer's outputs on the same inputs.
func fitSetup(t *testing.T, li, n, T int) (*Layer, []*Matrix, []Sample) {
	t.Helper()
	ck, m := tinyQuantized(t, li)
	ref, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	l, byName, err := Build(&c, li, ck, func(name string) model.Linear { return *m.Slot(name) })
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Matrix
	for _, name := range quantizableIn(&c, li) {
		ms = append(ms, byName[name])
	}
	rows := make([]Sample, n)
	s := ref.NewState()
	for i, x := range tinyRows(m, rand.New(rand.NewPCG(2, 2)), n, T) {
		rows[i] = Sample{T: T, X: widenTest(x.Data)}
		s.Reset()
		ref.ForwardLayer(s, li, &x)
		rows[i].Target = widenTest(x.Data)
	}
	return l, ms, rows
}

// TestFitLowersHeldOutLoss fits forge-tiny's first (DeltaNet) layer, RTN
// LUT4, to its unquantized outputs on random token rows: 40 Adam steps
// must lower the held-out loss by ≥ 1% (measured: 1.5%, 0.014737 →
// 0.014522; at learning rates ≥ 1e-3 these 8 rows of 64 tokens overfit
// and the keep rule reverts) and keep the values, change every matrix's codebook, and leave
// values that are fp16 (what a bundle stores) — the exported matrices give
// the fitted layer's loss.
func TestFitLowersHeldOutLoss(t *testing.T) {
	l, ms, rows := fitSetup(t, 0, 10, 64)
	before := make([][]float64, len(ms))
	for i, m := range ms {
		before[i] = append([]float64(nil), m.Book...)
	}
	rep, err := Fit(l, ms, rows[:8], rows[8:], Options{Steps: 40, LRLUT: 3e-4, LRScale: 3e-4})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Kept || !(rep.HeldAfter < 0.99*rep.HeldBefore) || rep.Reverted != "" {
		t.Fatalf("held-out %.5g → %.5g, kept %v %q: want a drop of ≥ 1%%", rep.HeldBefore, rep.HeldAfter, rep.Kept, rep.Reverted)
	}
	t.Logf("held-out %.5g → %.5g, train %.5g → %.5g", rep.HeldBefore, rep.HeldAfter, rep.TrainFirst, rep.TrainLast)
	for i, m := range ms {
		changed := false
		for j, v := range m.Book {
			changed = changed || v != before[i][j]
			if float64(tensor.F16ToF32(tensor.F32ToF16(float32(v)))) != v {
				t.Fatalf("matrix %d: codebook value %v is not an fp16 value", i, v)
			}
		}
		if !changed {
			t.Errorf("matrix %d: codebook unchanged", i)
		}
		lm, err := m.Export()
		if err != nil {
			t.Fatal(err)
		}
		back, err := NewMatrix(lm)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range back.w {
			if math.Abs(v-m.w[j]) > 1e-12*math.Max(1, math.Abs(v)) {
				t.Fatalf("matrix %d: exported Ŵ[%d] = %v, fitted %v", i, j, v, m.w[j])
			}
		}
	}
}

// TestFitReverts checks the failure paths: a learning rate ≤ 0 and a
// non-finite held-out loss are errors; a step whose loss or parameters
// blow up (learning rate 1e300) reverts the layer to its starting values
// and says so, never leaving non-finite weights.
func TestFitReverts(t *testing.T) {
	l, ms, rows := fitSetup(t, 3, 3, 16)
	if _, err := Fit(l, ms, rows[:2], rows[2:], Options{LRLUT: -1}); err == nil || !strings.Contains(err.Error(), "learning rate") {
		t.Fatalf("negative learning rate: %v", err)
	}
	start := make([][]float64, len(ms))
	for i, m := range ms {
		start[i] = append([]float64(nil), m.w...)
	}
	rep, err := Fit(l, ms, rows[:2], rows[2:], Options{Steps: 3, LRLUT: 1e300, LRScale: 1e300})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kept || rep.Reverted == "" {
		t.Fatalf("a blown-up fit: kept %v, reverted %q", rep.Kept, rep.Reverted)
	}
	for i, m := range ms {
		for j, v := range m.w {
			if v != start[i][j] {
				t.Fatalf("matrix %d: Ŵ[%d] = %v after the revert, started %v", i, j, v, start[i][j])
			}
		}
	}
	bad := append([]Sample(nil), rows...)
	bad[2] = Sample{T: rows[2].T, X: rows[2].X, Target: append([]float64(nil), rows[2].Target...)}
	bad[2].Target[5] = math.NaN()
	if _, err := Fit(l, ms, bad[:2], bad[2:], Options{Steps: 1}); !errors.Is(err, ErrLoss) {
		t.Fatalf("a NaN held-out target: %v, want ErrLoss", err)
	}
}
