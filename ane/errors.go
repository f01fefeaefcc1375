package ane

import (
	"encoding/json"
	"math"
	"slices"
)

// Num is a float64 that encodes as JSON null when it is not finite (an
// overflow upstream makes errors NaN or Inf, which JSON cannot hold).
type Num float64

// MarshalJSON writes null for NaN and ±Inf.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(n))
}

// Errors compares a stream of device rows e with the fp32 rows r of the
// same weights (reference-pipeline §3.1), over every token t of every row:
//
//	rel_l2   = ‖e − r‖ / ‖r‖ over all tokens at once
//	cosine   = ⟨e, r⟩ / (‖e‖·‖r‖) over all tokens at once
//	median   = the median over tokens of ‖e_t − r_t‖ / ‖r_t‖
//	quarters = the mean of that per-token error over the tokens in each
//	           quarter of the row's positions (a rise means drift)
//	share    = the median over tokens of ‖e_t − r_t‖ / ‖r_t − x_t‖, the
//	           error relative to the part's own update (x the fp32 stream
//	           entering it): per-token error × |target| / |target − input|
//
// Tokens whose device row holds a NaN or an infinity are counted in
// NonFinite; they make rel_l2 and cosine undefined (NaN, null in JSON)
// and count as an infinite error in the median, quarters and share.
type Errors struct {
	RelL2     Num    `json:"rel_l2"`
	Cosine    Num    `json:"cosine"`
	MedianRel Num    `json:"median_token_rel"`
	Quarters  [4]Num `json:"quarter_rel"`
	Share     Num    `json:"share_of_update"`
	NonFinite int64  `json:"nonfinite_tokens"`
}

// errAcc accumulates Errors.
type errAcc struct {
	ee, rr, er, dd float64
	tok, share     []float64
	qsum           [4]float64
	qn             [4]int
	nonfinite      int64
}

// add takes T rows of width H: dev, ref and in (the fp32 stream entering
// the part), each [T, H].
func (a *errAcc) add(dev, ref, in []float32, T, H int) {
	for t := range T {
		e, r, x := dev[t*H:(t+1)*H], ref[t*H:(t+1)*H], in[t*H:(t+1)*H]
		var ee, rr, er, dd, uu float64
		for i := range e {
			ev, rv := float64(e[i]), float64(r[i])
			ee += ev * ev
			rr += rv * rv
			er += ev * rv
			dd += (ev - rv) * (ev - rv)
			u := rv - float64(x[i])
			uu += u * u
		}
		q := min(3, 4*t/T)
		if math.IsNaN(ee) || math.IsInf(ee, 0) {
			a.nonfinite++
			inf := math.Inf(1)
			a.tok, a.share = append(a.tok, inf), append(a.share, inf)
			a.qsum[q] = inf
			a.qn[q]++
			continue
		}
		a.ee += ee
		a.rr += rr
		a.er += er
		a.dd += dd
		rel := math.Sqrt(dd / rr)
		a.tok = append(a.tok, rel)
		a.share = append(a.share, math.Sqrt(dd/uu))
		a.qsum[q] += rel
		a.qn[q]++
	}
}

func (a *errAcc) result() Errors {
	out := Errors{
		RelL2:     Num(math.Sqrt(a.dd / a.rr)),
		Cosine:    Num(a.er / math.Sqrt(a.ee*a.rr)),
		MedianRel: Num(median(a.tok)),
		Share:     Num(median(a.share)),
		NonFinite: a.nonfinite,
	}
	for q := range 4 {
		out.Quarters[q] = Num(a.qsum[q] / float64(a.qn[q]))
	}
	if a.nonfinite > 0 || len(a.tok) == 0 {
		out.RelL2, out.Cosine = Num(math.NaN()), Num(math.NaN())
	}
	return out
}

// median of xs (NaN for none); xs is reordered.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
