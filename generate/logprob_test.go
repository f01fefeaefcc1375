package generate

import (
	"context"
	"math"
	"testing"
)

// TestLogprobOf: log-probabilities of logits (0, ln 2, ln 3, −∞) are
// ln(1/6), ln(2/6), ln(3/6), −∞, and the top two are ids 2 then 1.
func TestLogprobOf(t *testing.T) {
	logits := []float32{0, float32(math.Log(2)), float32(math.Log(3)), float32(math.Inf(-1))}
	lp := logprobOf(logits, 1, 2)
	if math.Abs(lp.Logprob-math.Log(2.0/6)) > 1e-7 { // float32 logits: ln 2 to 3e-8
		t.Errorf("logprob %v, want %v", lp.Logprob, math.Log(2.0/6))
	}
	if len(lp.Top) != 2 || lp.Top[0].ID != 2 || lp.Top[1].ID != 1 || math.Abs(lp.Top[0].Logprob-math.Log(0.5)) > 1e-7 {
		t.Errorf("top %+v", lp.Top)
	}
	if lp := logprobOf(logits, 3, 0); !math.IsInf(lp.Logprob, -1) || lp.Top != nil {
		t.Errorf("−∞ logit: %+v", lp)
	}
}

// TestLogprobs: a greedy reply's logprobs list one entry per token, the
// token itself the most likely candidate, candidates in descending order
// and their probabilities below 1 in sum.
func TestLogprobs(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, tok, Options{})
	res, err := e.Generate(context.Background(), Request{Prompt: mustPrompt(t, tok, "def main():"), MaxTokens: 12, Logprobs: true, TopLogprobs: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Logprobs) != len(res.Tokens) {
		t.Fatalf("%d logprobs for %d tokens", len(res.Logprobs), len(res.Tokens))
	}
	for i, lp := range res.Logprobs {
		sum := 0.0
		for j, c := range lp.Top {
			sum += math.Exp(c.Logprob)
			if j > 0 && c.Logprob > lp.Top[j-1].Logprob {
				t.Fatalf("step %d: candidates out of order %+v", i, lp.Top)
			}
		}
		if lp.ID != res.Tokens[i] || len(lp.Top) != 5 || lp.Top[0].ID != lp.ID || lp.Top[0].Logprob != lp.Logprob || lp.Logprob > 0 || sum > 1+1e-9 {
			t.Fatalf("step %d: %+v (token %d), top mass %v", i, lp, res.Tokens[i], sum)
		}
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: []int{1}, Logprobs: true, TopLogprobs: 21}, nil); err == nil {
		t.Fatal("21 top logprobs accepted")
	}
}
