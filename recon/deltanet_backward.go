package recon

import (
	"fmt"
	"math"
)

// Backward returns dL/du [T][H] for dL/dy [T][H], calling Backward on all
// five Linears (their gradients accumulate). In reverse order of Forward:
//
// Gated norm, n = o·r, r = (mean(o²)+ε)^−½, s = silu(z), ô = n⊙w⊙s:
//
//	dz = dô⊙n⊙w⊙silu′(z),  gn = dô⊙w⊙s,  do = r·(gn − n·(gn·n)/dv)
//
// Gated delta rule, backwards over t with dS = dL/dS_t (0 after the last
// token), P = α·S_{t−1}, u = β·e, e = v − Pᵀk̂, S_t = P + k̂·uᵀ, o = S_tᵀq̂:
//
//	dq̂ += S_t·do;  dS += q̂·doᵀ
//	du = dSᵀk̂;  dk̂ += dS·u;  dβ = du·e;  de = β·du;  dv = de
//	dP = dS − k̂·deᵀ;  dk̂ −= P·de;  dα = ⟨dP, S_{t−1}⟩;  dS_{t−1} = α·dP
//
// (q̂, k̂ of a key head gather the gradients of its Hv/Hk value heads; the
// states inside each segment are recomputed from its checkpoint.) Gates:
// da = dα·α·(−A·σ(a+dt_bias)), db = dβ·β(1−β). L2 norm, x̂ = x·r·m with
// r = (Σx²+1e-6)^−½: dx = m·r·(dx̂ − x·r²·(x·dx̂)). Then dpre = dX̃⊙silu′(pre),
// the transposed conv dX_r = Σ_j w[j]⊙dpre_{r+K−1−j}, and the projections.
func (d *DeltaNet) Backward(tape any, dy []float64) []float64 {
	tp, ok := tape.(*deltaTape)
	if !ok {
		panic(fmt.Sprintf("recon: deltanet: Backward of a %T tape", tape))
	}
	T := tp.T
	cd, kt, vt, hv, dv := d.convDim(), d.hk*d.dk, d.hv*d.dv, d.hv, d.dv
	du := make([]float64, T*d.hidden)
	if T == 0 {
		return du
	}

	// Output projection and gated norm.
	don := make([]float64, T*vt)
	d.out.Backward(don, tp.on, dy, T)
	do, dz := make([]float64, T*vt), make([]float64, T*vt)
	for t := range T {
		for h := range hv {
			i0 := t*vt + h*dv
			o, z, g := tp.o[i0:i0+dv], tp.z[i0:i0+dv], don[i0:i0+dv]
			r := tp.rr[t*hv+h]
			var dot float64
			for j, x := range o {
				sz := sigmoid(z[j])
				n := x * r
				dz[i0+j] = g[j] * n * d.normW[j] * sz * (1 + z[j]*(1-sz)) // silu′(z) = σ(z)(1 + z(1−σ(z)))
				gn := g[j] * d.normW[j] * z[j] * sz
				do[i0+j] = gn // gn for now
				dot += gn * n
			}
			c := dot / float64(dv)
			for j, x := range o {
				do[i0+j] = r * (do[i0+j] - x*r*c)
			}
		}
	}

	// Gated delta rule, value head by value head.
	dqk := make([]float64, T*2*kt) // [T][2·Hk·dk] dL/dq̂ ‖ dL/dk̂
	dxc := make([]float64, T*cd)   // [T][convDim]; the v part is written here
	dalpha, dbeta := make([]float64, T*hv), make([]float64, T*hv)
	rs := newRuleScratch(tp.seg, d.dk, dv)
	for h := range hv {
		d.ruleHeadBackward(tp, h, do, dqk, dxc, dalpha, dbeta, rs)
	}

	// Gates.
	da, db := make([]float64, T*hv), make([]float64, T*hv)
	for t := range T {
		for h := range hv {
			i := t*hv + h
			da[i] = dalpha[i] * tp.alpha[i] * (-d.rate[h] * tp.sa[i])
			db[i] = dbeta[i] * tp.beta[i] * (1 - tp.beta[i])
		}
	}

	// L2 norms of q and k into the q and k parts of dxc.
	qs := 1 / math.Sqrt(float64(d.dk))
	for t := range T {
		row, g, dst := tp.xc[t*cd:], dqk[t*2*kt:], dxc[t*cd:]
		for h := range 2 * d.hk {
			x, gh := row[h*d.dk:(h+1)*d.dk], g[h*d.dk:(h+1)*d.dk]
			r := tp.rn[t*2*d.hk+h]
			m := r
			if h < d.hk {
				m *= qs
			}
			var xg float64
			for i, v := range x {
				xg += v * gh[i]
			}
			c := r * r * xg
			for i, v := range x {
				dst[h*d.dk+i] = m * (gh[i] - v*c)
			}
		}
	}

	// SiLU, then the transposed causal conv.
	for i, p := range tp.pre {
		s := sigmoid(p)
		dxc[i] *= s * (1 + p*(1-s))
	}
	dx0 := make([]float64, T*cd)
	K := d.taps
	for t := range T {
		g := dxc[t*cd : (t+1)*cd]
		for j := range K {
			r := t - (K - 1) + j
			if r < 0 {
				continue
			}
			w, dst := d.conv[j*cd:(j+1)*cd], dx0[r*cd:(r+1)*cd]
			for c := range dst {
				dst[c] += w[c] * g[c]
			}
		}
	}

	// Projections.
	d.qkv.Backward(du, tp.u, dx0, T)
	tmp := make([]float64, T*d.hidden)
	for _, p := range []struct {
		l  Linear
		dy []float64
	}{{d.z, dz}, {d.a, da}, {d.b, db}} {
		p.l.Backward(tmp, tp.u, p.dy, T)
		for i, v := range tmp {
			du[i] += v
		}
	}
	return du
}

// ruleScratch is one value head's buffers for ruleHeadBackward.
type ruleScratch struct {
	states []float64 // [seg+1][dk·dv] S_{t0−1} … S_{t0+seg−1}
	dS     []float64 // [dk][dv] dL/dS_t
	du, de []float64 // [dv]
	e      []float64 // [dv] recomputation scratch
}

func newRuleScratch(seg, dk, dv int) *ruleScratch {
	return &ruleScratch{
		states: make([]float64, (seg+1)*dk*dv), dS: make([]float64, dk*dv),
		du: make([]float64, dv), de: make([]float64, dv), e: make([]float64, dv),
	}
}

// ruleHeadBackward back-propagates value head h's recurrence: it adds
// dL/dq̂ and dL/dk̂ into dqk, writes dL/dv into dxc's v channels of h and
// dL/dα, dL/dβ of h, given dL/do in do.
func (d *DeltaNet) ruleHeadBackward(tp *deltaTape, h int, do, dqk, dxc, dalpha, dbeta []float64, rs *ruleScratch) {
	q, k, v := d.headRows(tp, h)
	kh := h / (d.hv / d.hk)
	dk, dv, kt, cd, vt, hv := d.dk, d.dv, d.hk*d.dk, d.convDim(), d.hv*d.dv, d.hv
	kt2, ns := 2*kt, dk*dv
	nseg := nSeg(tp.T, tp.seg)
	ck := tp.ckpt[h*nseg*ns:]
	dS := rs.dS
	clear(dS)
	for s := nseg - 1; s >= 0; s-- {
		t0, t1 := s*tp.seg, min((s+1)*tp.seg, tp.T)
		// Recompute S_{t0} … S_{t1−1} from the state entering the segment.
		copy(rs.states[:ns], ck[s*ns:(s+1)*ns])
		for t := t0; t < t1; t++ {
			i := t - t0
			cur := rs.states[(i+1)*ns : (i+2)*ns]
			copy(cur, rs.states[i*ns:(i+1)*ns])
			deltaStep(cur, k[t*kt2:t*kt2+dk], v[t*cd:t*cd+dv], tp.alpha[t*hv+h], tp.beta[t*hv+h], rs.e)
		}
		for t := t1 - 1; t >= t0; t-- {
			i := t - t0
			prev, cur := rs.states[i*ns:(i+1)*ns], rs.states[(i+1)*ns:(i+2)*ns]
			qt, kv := q[t*kt2:t*kt2+dk], k[t*kt2:t*kt2+dk]
			dq := dqk[t*kt2+kh*dk : t*kt2+(kh+1)*dk]
			dkk := dqk[t*kt2+kt+kh*dk : t*kt2+kt+(kh+1)*dk]
			dout := do[t*vt+h*dv : t*vt+(h+1)*dv] // dL/do_t
			e := tp.e[t*vt+h*dv : t*vt+(h+1)*dv]
			alpha, beta := tp.alpha[t*hv+h], tp.beta[t*hv+h]
			du, de := rs.du, rs.de
			clear(du)
			// o = S_tᵀq̂, then S_t = P + k̂·(β·e)ᵀ.
			for r := range dk {
				row, dsr := cur[r*dv:(r+1)*dv], dS[r*dv:(r+1)*dv]
				qr, kr := qt[r], kv[r]
				var gq, gk float64
				for j := range row {
					gq += row[j] * dout[j]
					dsr[j] += qr * dout[j]
					du[j] += dsr[j] * kr
					gk += dsr[j] * e[j]
				}
				dq[r] += gq
				dkk[r] += gk * beta
			}
			var dbt float64
			for j := range du {
				dbt += du[j] * e[j]
				de[j] = beta * du[j]
			}
			dbeta[t*hv+h] = dbt
			copy(dxc[t*cd+2*kt+h*dv:t*cd+2*kt+(h+1)*dv], de)
			// e = v − Pᵀk̂, P = α·S_{t−1}.
			var da float64
			for r := range dk {
				row, dsr := prev[r*dv:(r+1)*dv], dS[r*dv:(r+1)*dv]
				kr := kv[r]
				var gk float64
				for j := range row {
					gk += row[j] * de[j]
					dp := dsr[j] - kr*de[j]
					da += dp * row[j]
					dsr[j] = alpha * dp
				}
				dkk[r] -= alpha * gk
			}
			dalpha[t*hv+h] = da
		}
	}
}
