package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"forge/server"
	"forge/source"
)

// TestDraftServer: a server whose slots draft with forge-tiny-draft answers
// the official client's greedy chat requests with the plain server's
// replies, streamed and whole, the second time from the prompt cache (the
// drafter's snapshots beside the target's); /health reports the last
// request's drafting (kept, accept rate, histogram, tokens per target
// call) and /metrics the speculative series.
func TestDraftServer(t *testing.T) {
	dm, dsrc, err := source.Load(filepath.Join("..", "models", "forge-tiny-draft"))
	if err != nil {
		t.Fatal(err)
	}
	defer dsrc.Close()
	url, c := start(t, server.Options{Draft: dm, DraftK: 4, DraftName: "forge-tiny-draft"})
	_, plain := start(t, server.Options{NoCache: true})
	ctx := context.Background()
	p := greedy([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You write Go."),
		openai.UserMessage("Write a function that reverses a slice of ints.")}, 60)
	want, err := plain.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Choices[0].Message.Content != want.Choices[0].Message.Content {
			t.Fatalf("request %d: drafted %q, plain %q", i, got.Choices[0].Message.Content, want.Choices[0].Message.Content)
		}
		if i == 1 && got.Usage.PromptTokensDetails.CachedTokens == 0 {
			t.Fatal("the second request reused nothing")
		}
	}
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current().Choices; len(ch) > 0 {
			text.WriteString(ch[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil || text.String() != want.Choices[0].Message.Content {
		t.Fatalf("streamed %q (%v), plain %q", text.String(), err, want.Choices[0].Message.Content)
	}
	var h struct {
		Spec struct {
			Drafter     string  `json:"drafter"`
			Drafted     int     `json:"drafted"`
			Kept        int     `json:"kept"`
			AcceptRate  float64 `json:"accept_rate"`
			AcceptHist  []int   `json:"accept_hist"`
			TargetCalls int     `json:"target_calls"`
			PerCall     float64 `json:"tokens_per_call"`
		} `json:"speculative"`
	}
	if err := json.Unmarshal([]byte(get(t, url+"/health")), &h); err != nil {
		t.Fatal(err)
	}
	if s := h.Spec; s.Drafter != "forge-tiny-draft" || s.TargetCalls == 0 || len(s.AcceptHist) != 5 || s.Kept > s.Drafted || s.PerCall <= 0 {
		t.Fatalf("/health speculative %+v", s)
	}
	m := get(t, url+"/metrics")
	for _, series := range []string{"forge_draft_tokens_total", "forge_draft_kept_per_round_bucket", `forge_speculative_seconds_total{part="verify"}`} {
		if !strings.Contains(m, series) {
			t.Fatalf("/metrics lacks %s", series)
		}
	}
}
