package generate

import "forge/sample"

// Sampling defaults of the reference server (reference-pipeline.md §6.3):
// with thinking on, temperature 1.0 and top-p 0.95, without 0.7 and 0.8;
// top-k 20 in both.
const (
	DefaultTopK             = 20
	DefaultTemperature      = 0.7
	DefaultTopP             = 0.8
	DefaultThinkTemperature = 1.0
	DefaultThinkTopP        = 0.95
)

// DefaultSampling returns the reference's sampling defaults for a reply
// with thinking on or off.
func DefaultSampling(think bool) sample.Options {
	if think {
		return sample.Options{Temperature: DefaultThinkTemperature, TopP: DefaultThinkTopP, TopK: DefaultTopK}
	}
	return sample.Options{Temperature: DefaultTemperature, TopP: DefaultTopP, TopK: DefaultTopK}
}

// DefaultThinkBudget is the reference's medium-effort thinking budget.
const DefaultThinkBudget = 6144

// ThinkBudget is the reference's policy (§4.4): with thinking on, a reply
// of at most maxTokens thinks for at most min(budget, max(maxTokens − 4096,
// maxTokens / 2)) tokens, so that room for the answer remains. budget 0
// means DefaultThinkBudget.
func ThinkBudget(budget, maxTokens int) int {
	if budget == 0 {
		budget = DefaultThinkBudget
	}
	return min(budget, max(maxTokens-4096, maxTokens/2))
}
