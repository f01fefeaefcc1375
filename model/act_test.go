package model_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"forge/internal/tinylut"
	"forge/lut"
	"forge/model"
)

// klRow returns KL(softmax(p) ‖ softmax(q)) of two logit rows, in float64.
func klRow(p, q []float32) float64 {
	lse := func(v []float32) float64 {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, float64(x))
		}
		s := 0.0
		for _, x := range v {
			s += math.Exp(float64(x) - m)
		}
		return m + math.Log(s)
	}
	lp, lq := lse(p), lse(q)
	kl := 0.0
	for i := range p {
		a := float64(p[i]) - lp
		kl += math.Exp(a) * (a - (float64(q[i]) - lq))
	}
	return kl
}

// TestActInt8: on forge-tiny rounded to LUT4, decoding with int8
// activations stays close to the float32 product — the mean KL over 200
// teacher-forced steps below 1e-3, a ninth of what LUT4 rounding itself
// costs forge-tiny (mean KL 0.0089, BENCHMARKS.md) — and is deterministic:
// a rewound state repeats its logits bit for bit, a verify-sized prefill
// (T ≤ model.Int8Rows) matches the same tokens stepped one by one, and a
// step allocates nothing. The prefill tolerance is int8 rounding's, not
// float32's: the chunked delta rule differs from the stepped recurrence by
// ~1e-6, and such a difference can carry an activation across a rounding
// boundary, moving it one quantum (up to 0.4% of its group's largest
// value); measured, that moves forge-tiny's logits (±20) by up to 0.035
// in the portable build (0 in the AVX-512 one, whose float parts agree
// bit for bit here), so the bound is 0.1.
func TestActInt8(t *testing.T) {
	m, err := tinylut.Load(repoPath("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	toks := randTokens(rand.New(rand.NewPCG(3, 4)), 201, m.Config().Vocab)
	exact, fast := m.NewState(), m.NewState()
	fast.SetAct(model.ActInt8)
	if fast.Act() != model.ActInt8 || exact.Act() != model.ActFloat32 {
		t.Fatalf("Act: %v, %v", fast.Act(), exact.Act())
	}
	start := fast.Mark()
	var kl float64
	first := make([][]float32, 0, 8)
	for i, tok := range toks[:200] {
		a := m.Forward(exact, []int{tok}).Row(0)
		b := m.Forward(fast, []int{tok}).Row(0)
		kl += klRow(a, b)
		if i < 8 {
			first = append(first, append([]float32(nil), b...))
		}
	}
	if kl /= 200; kl >= 1e-3 || kl == 0 {
		t.Errorf("int8 activations: mean KL %.3g against float32, want in (0, 1e-3)", kl)
	} else {
		t.Logf("int8 activations: mean KL %.3g against float32 over 200 steps", kl)
	}
	fast.Rewind(start)
	for i, tok := range toks[:8] {
		b := m.Forward(fast, []int{tok}).Row(0)
		for j := range b {
			if math.Float32bits(b[j]) != math.Float32bits(first[i][j]) {
				t.Fatalf("rewound step %d logit %d: %v, first run %v", i, j, b[j], first[i][j])
			}
		}
	}
	fast.Rewind(start)
	block := m.Forward(fast, toks[:8])
	for i := range 8 {
		for j, v := range block.Row(i) {
			if d := math.Abs(float64(v - first[i][j])); d > 0.1 {
				t.Fatalf("prefill row %d logit %d: %v, stepped %v (|Δ| %.3g)", i, j, v, first[i][j], d)
			}
		}
	}
	tok := []int{toks[200]}
	if n := testing.AllocsPerRun(20, func() { m.Forward(fast, tok) }); n != 0 {
		t.Errorf("an int8 decode step allocates %v times", n)
	}
}

// TestParseAct: the CLI's spellings, auto resolving by the CPU's int8
// kernels, and a clear error naming a bad value.
func TestParseAct(t *testing.T) {
	auto := model.ActFloat32
	if lut.Int8Kernels() {
		auto = model.ActInt8
	}
	for s, want := range map[string]model.Act{"": model.ActFloat32, "f32": model.ActFloat32, "fp32": model.ActFloat32, "int8": model.ActInt8, "auto": auto} {
		if got, err := model.ParseAct(s); err != nil || got != want {
			t.Errorf("ParseAct(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := model.ParseAct("int4"); err == nil || !strings.Contains(err.Error(), `"int4"`) {
		t.Errorf("ParseAct(int4): %v", err)
	}
}

// TestResolveAct: a checkpoint's bf16 products never meet int8
// activations, so asking for them resolves to float32 (what reports then
// say); a LUT4 model keeps what was asked, and float32 stays float32.
func TestResolveAct(t *testing.T) {
	dense := loadModel(t, repoPath("models", "forge-tiny"))
	for _, a := range []model.Act{model.ActFloat32, model.ActInt8, model.ActInt8All} {
		if got := dense.ResolveAct(a); got != model.ActFloat32 {
			t.Errorf("bf16 checkpoint: ResolveAct(%v) = %v, want f32", a, got)
		}
	}
	q, err := tinylut.Load(repoPath("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []model.Act{model.ActFloat32, model.ActInt8, model.ActInt8All} {
		if got := q.ResolveAct(a); got != a {
			t.Errorf("LUT4 model: ResolveAct(%v) = %v", a, got)
		}
	}
}
