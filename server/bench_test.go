package server_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"forge/server"
)

// BenchmarkTTFT is the time to the first token (a reply of one token,
// whole) of a ~2,000-token prompt (held-out code): cold, on a server
// that starts every request from an empty state, and cached, the same
// request again on a server with its prompt cache (only the tail after
// the turn snapshot is prefilled).
func BenchmarkTTFT(b *testing.B) {
	data, err := os.ReadFile("../data/code-heldout.txt")
	if err != nil {
		b.Fatal(err)
	}
	m, tok := tinyB(b)
	text := string(data)
	for n := len(text); len(tok.Encode(text)) > 1990 && n > 100; n = n * 9 / 10 {
		text = text[:n]
	}
	p := greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}, 1)
	for _, c := range []struct {
		name    string
		noCache bool
	}{{"cold", true}, {"cached", false}} {
		b.Run(c.name, func(b *testing.B) {
			_, cl := startB(b, m, tok, server.Options{NoCache: c.noCache, Slots: 1})
			r, err := cl.Chat.Completions.New(context.Background(), p) // warm-up, and the cache's first fill
			if err != nil {
				b.Fatal(err)
			}
			prompt, cached := r.Usage.PromptTokens, int64(0)
			b.ResetTimer()
			for b.Loop() {
				r, err := cl.Chat.Completions.New(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				cached = r.Usage.PromptTokensDetails.CachedTokens
			}
			b.ReportMetric(float64(prompt), "prompt-tokens")
			b.ReportMetric(float64(cached), "cached-tokens")
		})
	}
}

// BenchmarkStreams is decode throughput (tokens/s, all streams together)
// of 1 and 2 concurrent greedy replies of 128 tokens on a two-slot server.
func BenchmarkStreams(b *testing.B) {
	m, tok := tinyB(b)
	for _, streams := range []int{1, 2} {
		b.Run(map[int]string{1: "streams=1", 2: "streams=2"}[streams], func(b *testing.B) {
			_, cl := startB(b, m, tok, server.Options{NoCache: true, Slots: 2})
			p := greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("package main")}, 128)
			var gen int64
			var mu sync.Mutex
			b.ResetTimer()
			for b.Loop() {
				var wg sync.WaitGroup
				for range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, err := cl.Chat.Completions.New(context.Background(), p)
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						gen += r.Usage.CompletionTokens
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(gen)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
