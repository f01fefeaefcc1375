package model_test

import (
	"math"
	"path/filepath"
	"testing"

	"forge/checkpoint"
)

// TestPitfalls shows that each mistake of docs/model.md §13 would fail
// TestGoldenTrace. For every stage it recomputes the stage's output from the
// golden inputs twice, in plain float64 code: once correctly (which must
// match the golden output within the trace tolerance 1e-4, so the harness
// is right) and once with the mistake (which must miss it by more than 100×
// that tolerance). TestGoldenTrace holds the model to 1e-4 at every stage,
// so a model with any of these mistakes fails it.
func TestPitfalls(t *testing.T) {
	dir := repoPath("testdata", "qwen35-tiny-random")
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	g := openGolden(t, filepath.Join(dir, "golden.safetensors"))
	w := func(name string) []float32 {
		v, err := ck.Vector(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	gold := func(name string) []float32 { return goldenF32(t, g, "trace1."+name) }
	const T, H = 17, 256
	const la = "layers.0.linear_attn."
	const sa = "layers.3.self_attn."
	u0 := offsetNormRows(gold("embed"), w("layers.0.input_layernorm.weight"), H, true)
	u3 := offsetNormRows(gold("layer_out.2"), w("layers.3.input_layernorm.weight"), H, true)

	type stage struct {
		pitfall string
		golden  string
		right   func() []float32
		wrong   func() []float32
	}
	stages := []stage{
		{"w in place of 1+w on the offset norms", la + "qkv_proj",
			func() []float32 { return matmul(u0, w(la+"in_proj_qkv.weight"), H) },
			func() []float32 {
				return matmul(offsetNormRows(gold("embed"), w("layers.0.input_layernorm.weight"), H, false), w(la+"in_proj_qkv.weight"), H)
			}},
		{"conv taps reversed", la + "conv_silu",
			func() []float32 { return convSilu(gold(la+"qkv_proj"), w(la+"conv1d.weight"), 320, false, false) },
			func() []float32 { return convSilu(gold(la+"qkv_proj"), w(la+"conv1d.weight"), 320, true, false) }},
		{"SiLU before the conv", la + "conv_silu",
			func() []float32 { return convSilu(gold(la+"qkv_proj"), w(la+"conv1d.weight"), 320, false, false) },
			func() []float32 { return convSilu(gold(la+"qkv_proj"), w(la+"conv1d.weight"), 320, false, true) }},
		{"L2 norm missing on q", la + "q_l2",
			func() []float32 { return headSlice(gold(la+"conv_silu"), 320, 0, 64, true) },
			func() []float32 { return headSlice(gold(la+"conv_silu"), 320, 0, 64, false) }},
		{"conv applied after the split and L2 norm", la + "q_l2",
			func() []float32 { return headSlice(gold(la+"conv_silu"), 320, 0, 64, true) },
			func() []float32 {
				q := headSlice(gold(la+"qkv_proj"), 320, 0, 64, true)
				return convSilu(q, w(la + "conv1d.weight")[:64*4], 64, false, false)
			}},
		{"Qwen3-Next de-interleave applied", la + "q_l2",
			func() []float32 { return headSlice(gold(la+"conv_silu"), 320, 0, 64, true) },
			func() []float32 { return deinterleavedQ(gold(la + "conv_silu")) }},
		{"A_log read as the rate itself", la + "g",
			func() []float32 {
				return decay(matmul(u0, w(la+"in_proj_a.weight"), H), w(la+"A_log"), w(la+"dt_bias"), "ln")
			},
			func() []float32 {
				return decay(matmul(u0, w(la+"in_proj_a.weight"), H), w(la+"A_log"), w(la+"dt_bias"), "rate")
			}},
		{"A_log read as −A", la + "g",
			func() []float32 {
				return decay(matmul(u0, w(la+"in_proj_a.weight"), H), w(la+"A_log"), w(la+"dt_bias"), "ln")
			},
			func() []float32 {
				return decay(matmul(u0, w(la+"in_proj_a.weight"), H), w(la+"A_log"), w(la+"dt_bias"), "neg")
			}},
	}
	rule := func(tile, qScale, kScale bool) func() []float32 {
		return func() []float32 {
			return deltaRuleRef(gold(la+"q_l2"), gold(la+"k_l2"), gold(la+"v"), gold(la+"g"), gold(la+"beta"), tile, qScale, kScale)
		}
	}
	stages = append(stages,
		stage{"q/k heads tiled over value heads (h mod Hk)", la + "core_out", rule(false, true, false), rule(true, true, false)},
		stage{"missing 1/√dk on q", la + "core_out", rule(false, true, false), rule(false, false, false)},
		stage{"k scaled by 1/√dk as well", la + "core_out", rule(false, true, false), rule(false, true, true)},
		stage{"sigmoid(z) in the gated norm", la + "gated_norm_out",
			func() []float32 {
				return gatedNorm(gold(la+"core_out"), gold(la+"z"), w(la+"norm.weight"), false, false)
			},
			func() []float32 {
				return gatedNorm(gold(la+"core_out"), gold(la+"z"), w(la+"norm.weight"), true, false)
			}},
		stage{"+1 added to linear_attn.norm", la + "gated_norm_out",
			func() []float32 {
				return gatedNorm(gold(la+"core_out"), gold(la+"z"), w(la+"norm.weight"), false, false)
			},
			func() []float32 {
				return gatedNorm(gold(la+"core_out"), gold(la+"z"), w(la+"norm.weight"), false, true)
			}},
		stage{"q_proj split as [all queries ‖ all gates]", sa + "gate",
			func() []float32 { return gateSplit(matmul(u3, w(sa+"q_proj.weight"), H), false) },
			func() []float32 { return gateSplit(matmul(u3, w(sa+"q_proj.weight"), H), true) }},
	)
	qr := func(v ropeVariant) func() []float32 {
		return func() []float32 {
			return queriesRoped(matmul(u3, w(sa+"q_proj.weight"), H), w(sa+"q_norm.weight"), v)
		}
	}
	for _, v := range []ropeVariant{ropePairs, ropeFull, ropeExpD, ropeTheta1e4, ropeNone} {
		stages = append(stages, stage{"RoPE: " + v.String(), sa + "q_rope", qr(ropeRight), qr(v)})
	}
	att := func(scaleR bool) func() []float32 {
		return func() []float32 { return attnRef(gold(sa+"q_rope"), gold(sa+"k_rope"), gold(sa+"v"), scaleR) }
	}
	mix := func(siluGate bool) func() []float32 {
		return func() []float32 {
			return gatedOut(gold(sa+"attn_out"), gold(sa+"gate"), w(sa+"o_proj.weight"), siluGate)
		}
	}
	stages = append(stages,
		stage{"attention scale 1/√R in place of 1/√D", sa + "attn_out", att(false), att(true)},
		stage{"silu in place of sigmoid on the attention gate", sa + "mixer_out", mix(false), mix(true)},
	)
	for _, s := range stages {
		t.Run(s.pitfall, func(t *testing.T) {
			want := gold(s.golden)
			if d := maxAbsDiff(s.right(), want); d > 1e-4 {
				t.Fatalf("harness: correct %s off by %.3g", s.golden, d)
			}
			if d := maxAbsDiff(s.wrong(), want); !(d > 1e-2) {
				t.Errorf("mistake moves %s by only %.3g: the 1e-4 trace check would not catch it", s.golden, d)
			} else {
				t.Logf("mistake moves %s by %.3g", s.golden, d)
			}
		})
	}
}

// Plain float64 twins of each stage (docs/model.md §4, §6, §7, §8.1), written without
// any code from the model package.

func offsetNormRows(x, w []float32, n int, offset bool) []float32 {
	out := make([]float32, len(x))
	for r := 0; r < len(x)/n; r++ {
		var ss float64
		for _, v := range x[r*n : (r+1)*n] {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(n)+1e-6)
		for i := range n {
			sc := float64(w[i])
			if offset {
				sc += 1
			}
			out[r*n+i] = float32(float64(x[r*n+i]) * inv * sc)
		}
	}
	return out
}

func matmul(x, w []float32, in int) []float32 {
	T, out := len(x)/in, len(w)/in
	y := make([]float32, T*out)
	for t := range T {
		for o := range out {
			var s float64
			for j := range in {
				s += float64(x[t*in+j]) * float64(w[o*in+j])
			}
			y[t*out+o] = float32(s)
		}
	}
	return y
}

func sig(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func convSilu(x, taps []float32, C int, reversed, siluFirst bool) []float32 {
	T, K := len(x)/C, len(taps)/C
	out := make([]float32, len(x))
	for t := range T {
		for c := range C {
			var s float64
			for j := range K {
				r := t - (K - 1) + j
				if r < 0 {
					continue
				}
				tap := taps[c*K+j]
				if reversed {
					tap = taps[c*K+K-1-j]
				}
				v := float64(x[r*C+c])
				if siluFirst {
					v *= sig(v)
				}
				s += float64(tap) * v
			}
			if !siluFirst {
				s *= sig(s)
			}
			out[t*C+c] = float32(s)
		}
	}
	return out
}

// headSlice takes channels [lo, hi) of each row, L2-normalised per 32-dim head.
func headSlice(x []float32, C, lo, hi int, l2 bool) []float32 {
	var out []float32
	for t := 0; t < len(x)/C; t++ {
		out = append(out, x[t*C+lo:t*C+hi]...)
	}
	if l2 {
		for h := 0; h < len(out)/32; h++ {
			v := out[h*32 : (h+1)*32]
			var ss float64
			for _, a := range v {
				ss += float64(a) * float64(a)
			}
			inv := 1 / math.Sqrt(ss+1e-6)
			for i := range v {
				v[i] = float32(float64(v[i]) * inv)
			}
		}
	}
	return out
}

// deinterleavedQ reads q the Qwen3-Next way: channels grouped per key head
// as [q_h (32) ‖ k_h (32) ‖ v of its 3 value heads (96)].
func deinterleavedQ(x []float32) []float32 {
	var q []float32
	for t := 0; t < len(x)/320; t++ {
		for h := range 2 {
			q = append(q, x[t*320+h*160:t*320+h*160+32]...)
		}
	}
	return headSlice(q, 64, 0, 64, true)
}

func decay(a, aLog, dt []float32, mode string) []float32 {
	out := make([]float32, len(a))
	for i, v := range a {
		h := i % len(aLog)
		rate := math.Exp(float64(aLog[h]))
		switch mode {
		case "rate":
			rate = float64(aLog[h])
		case "neg":
			rate = -float64(aLog[h])
		}
		x := float64(v) + float64(dt[h])
		out[i] = float32(-rate * (math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))))
	}
	return out
}

// deltaRuleRef runs the recurrent form (docs/model.md §8.1) over 17 tokens, 6 value heads
// of 32, 2 key heads of 32.
func deltaRuleRef(q, k, v, g, beta []float32, tile, qScale, kScale bool) []float32 {
	const Hv, Hk, d = 6, 2, 32
	out := make([]float32, len(v))
	for h := range Hv {
		kh := h / (Hv / Hk)
		if tile {
			kh = h % Hk
		}
		S := make([]float64, d*d)
		for t := 0; t < len(g)/Hv; t++ {
			qt, kt := make([]float64, d), make([]float64, d)
			for i := range d {
				qt[i], kt[i] = float64(q[(t*Hk+kh)*d+i]), float64(k[(t*Hk+kh)*d+i])
				if qScale {
					qt[i] /= math.Sqrt(d)
				}
				if kScale {
					kt[i] /= math.Sqrt(d)
				}
			}
			alpha, b := math.Exp(float64(g[t*Hv+h])), float64(beta[t*Hv+h])
			for i := range S {
				S[i] *= alpha
			}
			for j := range d {
				var sk float64
				for i := range d {
					sk += S[i*d+j] * kt[i]
				}
				u := b * (float64(v[(t*Hv+h)*d+j]) - sk)
				var o float64
				for i := range d {
					S[i*d+j] += kt[i] * u
					o += S[i*d+j] * qt[i]
				}
				out[(t*Hv+h)*d+j] = float32(o)
			}
		}
	}
	return out
}

func gatedNorm(o, z, w []float32, sigmoidGate, plusOne bool) []float32 {
	w2 := make([]float32, len(w))
	for i := range w {
		w2[i] = w[i]
		if plusOne {
			w2[i]++
		}
	}
	n := offsetNormRows(o, w2, 32, false)
	for i, zi := range z {
		gz := float64(zi) * sig(float64(zi))
		if sigmoidGate {
			gz = sig(float64(zi))
		}
		n[i] = float32(float64(n[i]) * gz)
	}
	return n
}

// gateSplit extracts the gate half of q_proj's output [T, 4·2·64].
func gateSplit(p []float32, allThenAll bool) []float32 {
	var out []float32
	for t := 0; t < len(p)/512; t++ {
		row := p[t*512 : (t+1)*512]
		if allThenAll {
			out = append(out, row[256:]...)
			continue
		}
		for h := range 4 {
			out = append(out, row[h*128+64:h*128+128]...)
		}
	}
	return out
}

type ropeVariant int

const (
	ropeRight ropeVariant = iota
	ropePairs
	ropeFull
	ropeExpD
	ropeTheta1e4
	ropeNone
)

func (v ropeVariant) String() string {
	return [...]string{"halves", "adjacent pairs (2i, 2i+1)", "over all head_dim", "exponent over head_dim", "theta 1e4", "none"}[v]
}

// queriesRoped: per head q_norm then RoPE (R = 16 of D = 64, θ = 1e7), heads first [4][T][64].
func queriesRoped(p, qn []float32, v ropeVariant) []float32 {
	const D, Hq = 64, 4
	T := len(p) / 512
	out := make([]float32, Hq*T*D)
	for t := range T {
		for h := range Hq {
			q := offsetNormRows(p[t*512+h*128:t*512+h*128+D], qn, D, true)
			R, theta, expDen := 16, 1e7, 16.0
			switch v {
			case ropeFull:
				R, expDen = D, D
			case ropeExpD:
				expDen = D
			case ropeTheta1e4:
				theta = 1e4
			}
			x := make([]float64, D)
			for i := range D {
				x[i] = float64(q[i])
			}
			if v != ropeNone {
				for i := range R / 2 {
					a, b := i, i+R/2
					if v == ropePairs {
						a, b = 2*i, 2*i+1
					}
					s, c := math.Sincos(float64(t) * math.Pow(theta, -2*float64(i)/expDen))
					xa, xb := x[a], x[b]
					x[a], x[b] = xa*c-xb*s, xb*c+xa*s
				}
			}
			for i := range D {
				out[(h*T+t)*D+i] = float32(x[i])
			}
		}
	}
	return out
}

// attnRef: causal softmax attention, q [4][T][64], k/v [1][T][64] → [T][4·64].
func attnRef(q, k, v []float32, scaleR bool) []float32 {
	const D, Hq = 64, 4
	T := len(k) / D
	scale := 1 / math.Sqrt(D)
	if scaleR {
		scale = 1 / math.Sqrt(16)
	}
	out := make([]float32, T*Hq*D)
	for h := range Hq {
		for t := range T {
			s := make([]float64, t+1)
			mx := math.Inf(-1)
			for tau := range s {
				var d float64
				for i := range D {
					d += float64(q[(h*T+t)*D+i]) * float64(k[tau*D+i])
				}
				s[tau] = d * scale
				mx = math.Max(mx, s[tau])
			}
			var z float64
			for tau := range s {
				s[tau] = math.Exp(s[tau] - mx)
				z += s[tau]
			}
			for i := range D {
				var o float64
				for tau := range s {
					o += s[tau] / z * float64(v[tau*D+i])
				}
				out[(t*Hq+h)*D+i] = float32(o)
			}
		}
	}
	return out
}

func gatedOut(att, gate, wo []float32, siluGate bool) []float32 {
	y := make([]float32, len(att))
	for i := range att {
		gv := sig(float64(gate[i]))
		if siluGate {
			gv *= float64(gate[i])
		}
		y[i] = float32(float64(att[i]) * gv)
	}
	return matmul(y, wo, 256)
}
