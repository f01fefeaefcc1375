package generate

import "math"

// Logprob is a generated token's log-probability under the model's
// distribution at its step, log softmax(logits)[ID] (before the sampler's
// penalties, temperature and truncation), with the TopN most likely tokens
// of that step when the request asked for them.
type Logprob struct {
	ID      int
	Logprob float64
	Top     []TokenLogprob // most likely first
}

// TokenLogprob is one candidate of a step.
type TokenLogprob struct {
	ID      int
	Logprob float64
}

// MaxTopLogprobs is the most candidates a step may list (OpenAI's limit).
const MaxTopLogprobs = 20

// logprobOf returns id's log-probability under softmax(logits) and the
// top n candidates, in float64: lse = max + log Σ exp(l − max).
func logprobOf(logits []float32, id, n int) Logprob {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - mx)
	}
	lse := mx + math.Log(sum)
	lp := Logprob{ID: id, Logprob: float64(logits[id]) - lse}
	if n <= 0 {
		return lp
	}
	// Insertion into a sorted list of n: O(vocab · n) with n ≤ 20.
	top := make([]TokenLogprob, 0, n+1)
	for i, l := range logits {
		v := float64(l) - lse
		if len(top) == n && v <= top[n-1].Logprob {
			continue
		}
		j := len(top)
		for j > 0 && top[j-1].Logprob < v {
			j--
		}
		top = append(top, TokenLogprob{})
		copy(top[j+1:], top[j:])
		top[j] = TokenLogprob{ID: i, Logprob: v}
		if len(top) > n {
			top = top[:n]
		}
	}
	lp.Top = top
	return lp
}
