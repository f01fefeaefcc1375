package lcpp

import (
	"math"
	"slices"
)

// Stats accumulates scored positions as llama.cpp's kl_divergence_result
// does (sums in float64) and keeps every KL and Δp for the percentiles. The
// zero value is ready to use.
type Stats struct {
	sumNLL, sumNLL2         float64
	sumNLLBase, sumNLLBase2 float64
	sumNLLNLLBase           float64
	sumKLD, sumKLD2         float64
	sumDP, sumDP2, sumDP4   float64
	maxAbsDP                float64
	nSame, n                int
	klds, dps               []float64
	chunks                  []Chunk
}

// Add accumulates one position.
func (s *Stats) Add(p Position) {
	s.sumNLL += p.NLL
	s.sumNLL2 += p.NLL * p.NLL
	s.sumNLLBase += p.NLLBase
	s.sumNLLBase2 += p.NLLBase * p.NLLBase
	s.sumNLLNLLBase += p.NLL * p.NLLBase
	s.sumKLD += p.KLD
	s.sumKLD2 += p.KLD * p.KLD
	dp2 := p.DeltaP * p.DeltaP
	s.sumDP += p.DeltaP
	s.sumDP2 += dp2
	s.sumDP4 += dp2 * dp2
	s.maxAbsDP = max(s.maxAbsDP, math.Abs(p.DeltaP))
	if p.SameTop {
		s.nSame++
	}
	s.n++
	s.klds = append(s.klds, p.KLD)
	s.dps = append(s.dps, p.DeltaP)
}

// N returns the number of positions added.
func (s *Stats) N() int { return s.n }

// EndChunk records the running row of llama.cpp's per-chunk table after the
// positions of one more window, and returns it.
func (s *Stats) EndChunk() Chunk {
	lnQ, lnB, cov := s.lnPPL()
	c := Chunk{
		Chunk:      len(s.chunks) + 1,
		PPL:        expEstimate(lnQ),
		LnPPLRatio: Estimate{lnQ.Value - lnB.Value, math.Sqrt(lnQ.Unc*lnQ.Unc + lnB.Unc*lnB.Unc - 2*cov)},
		KLD:        meanSE(s.sumKLD, s.sumKLD2, s.n),
		RMSDeltaP:  s.rmsDeltaP(),
		SameTop:    s.sameTop(),
	}
	s.chunks = append(s.chunks, c)
	return c
}

// lnPPL returns mean ± se of nll_Q and of nll_B and their covariance.
func (s *Stats) lnPPL() (q, b Estimate, cov float64) {
	q = meanSE(s.sumNLL, s.sumNLL2, s.n)
	b = meanSE(s.sumNLLBase, s.sumNLLBase2, s.n)
	return q, b, covariance(s.sumNLL, s.sumNLLBase, s.sumNLLNLLBase, s.n)
}

// rmsDeltaP is sqrt(mean Δp²) ± se(Δp²)/(2·RMS) (llama.cpp's first-order
// propagation through the square root).
func (s *Stats) rmsDeltaP() Estimate {
	mse := meanSE(s.sumDP2, s.sumDP4, s.n)
	rms := math.Sqrt(mse.Value)
	return Estimate{rms, 0.5 / rms * mse.Unc}
}

// sameTop is p = n_same/N ± sqrt(p(1−p)/(N−1)).
func (s *Stats) sameTop() Estimate {
	p := float64(s.nSame) / float64(s.n)
	return Estimate{p, math.Sqrt(p * (1 - p) / float64(s.n-1))}
}

// Report summarizes the positions added so far (N ≥ 1), with the chunk rows
// recorded by EndChunk. nCtx, nVocab and nChunk describe the base.
func (s *Stats) Report(nCtx, nVocab, nChunk int) *Report {
	r := &Report{Definition: Definition, NCtx: nCtx, NVocab: nVocab, NChunk: nChunk, N: s.n,
		Enough: s.n >= minStats, Chunks: slices.Clone(s.chunks),
		KLDs: slices.Clone(s.klds), DeltaPs: slices.Clone(s.dps), MaxAbsDeltaP: s.maxAbsDP}
	if r.Chunks == nil {
		r.Chunks = []Chunk{}
	}
	if !r.Enough {
		return r
	}
	lnQ, lnB, cov := s.lnPPL()
	r.PPL, r.PPLBase, r.CovLnPPL = expEstimate(lnQ), expEstimate(lnB), cov
	if cor := cov / (lnQ.Unc * lnB.Unc); !math.IsNaN(cor) && !math.IsInf(cor, 0) {
		r.CorLnPPL = &cor
	}
	r.LnPPLRatio = Estimate{lnQ.Value - lnB.Value, math.Sqrt(lnQ.Unc*lnQ.Unc + lnB.Unc*lnB.Unc - 2*cov)}
	r.PPLRatio = expEstimate(r.LnPPLRatio)
	pplCov := r.PPL.Value * r.PPLBase.Value * cov
	r.PPLDiff = Estimate{r.PPL.Value - r.PPLBase.Value,
		math.Sqrt(r.PPL.Unc*r.PPL.Unc + r.PPLBase.Unc*r.PPLBase.Unc - 2*pplCov)}
	r.KLD = meanSE(s.sumKLD, s.sumKLD2, s.n)
	r.KLDPercentiles = percentiles(s.klds, kldFractions)
	r.DeltaP = meanSE(s.sumDP, s.sumDP2, s.n)
	r.DeltaPPercentiles = percentiles(s.dps, deltaPFractions)
	r.RMSDeltaP = s.rmsDeltaP()
	r.SameTop = s.sameTop()
	return r
}

// expEstimate maps a mean log x ± u to exp(x) ± exp(x)·u (first order).
func expEstimate(e Estimate) Estimate {
	v := math.Exp(e.Value)
	return Estimate{v, v * e.Unc}
}

// meanSE is llama.cpp's mean_and_uncertainty: mean = Σx/N and
// se = sqrt((Σx²/N − mean²)/(N−1)), with se = 0 when N ≤ 10 or the variance
// is not positive (and 0 ± 0 for N = 0).
func meanSE(sum, sum2 float64, n int) Estimate {
	if n < 1 {
		return Estimate{}
	}
	mean := sum / float64(n)
	v := sum2/float64(n) - mean*mean
	if v <= 0 || n <= 10 {
		return Estimate{mean, 0}
	}
	return Estimate{mean, math.Sqrt(v / float64(n-1))}
}

// covariance is llama.cpp's covariance of the two means:
// (Σab/N − (Σa/N)(Σb/N))/(N−1), and 0 when N < 10.
func covariance(sumA, sumB, sumAB float64, n int) float64 {
	if n < 10 {
		return 0
	}
	N := float64(n)
	return (sumAB/N - (sumA/N)*(sumB/N)) / (N - 1)
}

// percentiles sorts a copy of values and returns the order statistic at
// each fraction.
func percentiles(values, fractions []float64) []Percentile {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	out := make([]Percentile, len(fractions))
	for i, f := range fractions {
		out[i] = Percentile{f, percentile(sorted, f)}
	}
	return out
}

// percentile returns sorted's value at position f·(N−1), interpolating
// linearly between the neighbours: (1−t)·v[k] + t·v[k+1] with k = ⌊f·(N−1)⌋
// and t the fraction left over (llama.cpp's percentile lambda; its median,
// the mean of the two middle values for even N, is the same number at
// f = 0.5). llama.cpp computes the position in float32; the difference is
// below the printed precision.
func percentile(sorted []float64, f float64) float64 {
	if f <= 0 {
		return sorted[0]
	}
	if f >= 1 {
		return sorted[len(sorted)-1]
	}
	p := f * float64(len(sorted)-1)
	k := int(p)
	t := p - float64(k)
	return (1-t)*sorted[k] + t*sorted[min(k+1, len(sorted)-1)]
}
