package eval

import (
	"math"
	"slices"
)

// LCPPStats accumulates scored positions as llama.cpp's kl_divergence_result
// does (sums in float64) and keeps every KL and Δp for the percentiles. The
// zero value is ready to use.
type LCPPStats struct {
	sumNLL, sumNLL2         float64
	sumNLLBase, sumNLLBase2 float64
	sumNLLNLLBase           float64
	sumKLD, sumKLD2         float64
	sumDP, sumDP2, sumDP4   float64
	maxAbsDP                float64
	nSame, n                int
	klds, dps               []float64
	chunks                  []LCPPChunk
}

// Add accumulates one position.
func (s *LCPPStats) Add(p LCPPPosition) {
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
func (s *LCPPStats) N() int { return s.n }

// EndChunk records the running row of llama.cpp's per-chunk table after the
// positions of one more window, and returns it.
func (s *LCPPStats) EndChunk() LCPPChunk {
	lnQ, lnB, cov := s.lnPPL()
	c := LCPPChunk{
		Chunk:      len(s.chunks) + 1,
		PPL:        lcppExp(lnQ),
		LnPPLRatio: LCPPEstimate{lnQ.Value - lnB.Value, math.Sqrt(lnQ.Unc*lnQ.Unc + lnB.Unc*lnB.Unc - 2*cov)},
		KLD:        lcppMeanSE(s.sumKLD, s.sumKLD2, s.n),
		RMSDeltaP:  s.rmsDeltaP(),
		SameTop:    s.sameTop(),
	}
	s.chunks = append(s.chunks, c)
	return c
}

// lnPPL returns mean ± se of nll_Q and of nll_B and their covariance.
func (s *LCPPStats) lnPPL() (q, b LCPPEstimate, cov float64) {
	q = lcppMeanSE(s.sumNLL, s.sumNLL2, s.n)
	b = lcppMeanSE(s.sumNLLBase, s.sumNLLBase2, s.n)
	return q, b, lcppCovariance(s.sumNLL, s.sumNLLBase, s.sumNLLNLLBase, s.n)
}

// rmsDeltaP is sqrt(mean Δp²) ± se(Δp²)/(2·RMS) (llama.cpp's first-order
// propagation through the square root).
func (s *LCPPStats) rmsDeltaP() LCPPEstimate {
	mse := lcppMeanSE(s.sumDP2, s.sumDP4, s.n)
	rms := math.Sqrt(mse.Value)
	return LCPPEstimate{rms, 0.5 / rms * mse.Unc}
}

// sameTop is p = n_same/N ± sqrt(p(1−p)/(N−1)).
func (s *LCPPStats) sameTop() LCPPEstimate {
	p := float64(s.nSame) / float64(s.n)
	return LCPPEstimate{p, math.Sqrt(p * (1 - p) / float64(s.n-1))}
}

// Report summarizes the positions added so far (N ≥ 1), with the chunk rows
// recorded by EndChunk. nCtx, nVocab and nChunk describe the base.
func (s *LCPPStats) Report(nCtx, nVocab, nChunk int) *LCPPReport {
	r := &LCPPReport{Definition: LCPPDefinition, NCtx: nCtx, NVocab: nVocab, NChunk: nChunk, N: s.n,
		Enough: s.n >= lcppMinStats, Chunks: slices.Clone(s.chunks),
		KLDs: slices.Clone(s.klds), DeltaPs: slices.Clone(s.dps), MaxAbsDeltaP: s.maxAbsDP}
	if r.Chunks == nil {
		r.Chunks = []LCPPChunk{}
	}
	if !r.Enough {
		return r
	}
	lnQ, lnB, cov := s.lnPPL()
	r.PPL, r.PPLBase, r.CovLnPPL = lcppExp(lnQ), lcppExp(lnB), cov
	if cor := cov / (lnQ.Unc * lnB.Unc); !math.IsNaN(cor) && !math.IsInf(cor, 0) {
		r.CorLnPPL = &cor
	}
	r.LnPPLRatio = LCPPEstimate{lnQ.Value - lnB.Value, math.Sqrt(lnQ.Unc*lnQ.Unc + lnB.Unc*lnB.Unc - 2*cov)}
	r.PPLRatio = lcppExp(r.LnPPLRatio)
	pplCov := r.PPL.Value * r.PPLBase.Value * cov
	r.PPLDiff = LCPPEstimate{r.PPL.Value - r.PPLBase.Value,
		math.Sqrt(r.PPL.Unc*r.PPL.Unc + r.PPLBase.Unc*r.PPLBase.Unc - 2*pplCov)}
	r.KLD = lcppMeanSE(s.sumKLD, s.sumKLD2, s.n)
	r.KLDPercentiles = lcppPercentiles(s.klds, lcppKLDFractions)
	r.DeltaP = lcppMeanSE(s.sumDP, s.sumDP2, s.n)
	r.DeltaPPercentiles = lcppPercentiles(s.dps, lcppDeltaPFractions)
	r.RMSDeltaP = s.rmsDeltaP()
	r.SameTop = s.sameTop()
	return r
}

// expEstimate maps a mean log x ± u to exp(x) ± exp(x)·u (first order).
func lcppExp(e LCPPEstimate) LCPPEstimate {
	v := math.Exp(e.Value)
	return LCPPEstimate{v, v * e.Unc}
}

// meanSE is llama.cpp's mean_and_uncertainty: mean = Σx/N and
// se = sqrt((Σx²/N − mean²)/(N−1)), with se = 0 when N ≤ 10 or the variance
// is not positive (and 0 ± 0 for N = 0).
func lcppMeanSE(sum, sum2 float64, n int) LCPPEstimate {
	if n < 1 {
		return LCPPEstimate{}
	}
	mean := sum / float64(n)
	v := sum2/float64(n) - mean*mean
	if v <= 0 || n <= 10 {
		return LCPPEstimate{mean, 0}
	}
	return LCPPEstimate{mean, math.Sqrt(v / float64(n-1))}
}

// covariance is llama.cpp's covariance of the two means:
// (Σab/N − (Σa/N)(Σb/N))/(N−1), and 0 when N < 10.
func lcppCovariance(sumA, sumB, sumAB float64, n int) float64 {
	if n < 10 {
		return 0
	}
	N := float64(n)
	return (sumAB/N - (sumA/N)*(sumB/N)) / (N - 1)
}

// percentiles sorts a copy of values and returns the order statistic at
// each fraction.
func lcppPercentiles(values, fractions []float64) []LCPPPercentile {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	out := make([]LCPPPercentile, len(fractions))
	for i, f := range fractions {
		out[i] = LCPPPercentile{f, lcppPercentile(sorted, f)}
	}
	return out
}

// percentile returns sorted's value at position f·(N−1), interpolating
// linearly between the neighbours: (1−t)·v[k] + t·v[k+1] with k = ⌊f·(N−1)⌋
// and t the fraction left over (llama.cpp's percentile lambda; its median,
// the mean of the two middle values for even N, is the same number at
// f = 0.5). llama.cpp computes the position in float32; the difference is
// below the printed precision.
func lcppPercentile(sorted []float64, f float64) float64 {
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
