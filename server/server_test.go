package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"forge/model"
	"forge/server"
	"forge/source"
	"forge/tokenizer"
)

var (
	tinyOnce sync.Once
	tinyM    *model.Model
	tinyTok  *tokenizer.Tokenizer
	tinyErr  error
)

// tiny loads models/forge-tiny once for all tests.
func tiny(t *testing.T) (*model.Model, *tokenizer.Tokenizer) { return tinyB(t) }

func tinyB(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	tinyOnce.Do(func() {
		dir := "../models/forge-tiny"
		tinyM, _, tinyErr = source.Load(dir)
		if tinyErr == nil {
			tinyTok, tinyErr = tokenizer.Load(dir)
		}
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyM, tinyTok
}

// start serves forge-tiny with opt over loopback and returns its base URL
// and an official OpenAI client for it.
func start(t *testing.T, opt server.Options) (string, openai.Client) {
	t.Helper()
	m, tok := tiny(t)
	return startB(t, m, tok, opt)
}

func startB(t testing.TB, m *model.Model, tok *tokenizer.Tokenizer, opt server.Options) (string, openai.Client) {
	t.Helper()
	ts := httptest.NewServer(server.New(m, tok, opt))
	t.Cleanup(ts.Close)
	key := opt.APIKey
	if key == "" {
		key = "unused"
	}
	return ts.URL, openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func greedy(msgs []openai.ChatCompletionMessageParamUnion, n int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "forge-tiny", Messages: msgs, MaxTokens: openai.Int(n), Temperature: openai.Float(0)}
}

// TestChatClient: the official client's chat call gets a reply, usage
// counts, and the same request again reuses the cached prompt (all but the
// last token's worth, reported as cached_tokens) and gets the same text.
func TestChatClient(t *testing.T) {
	_, c := start(t, server.Options{})
	ctx := context.Background()
	p := greedy([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You write Go."), openai.UserMessage("Write a function that adds two ints.")}, 24)
	a, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Choices) != 1 || a.Choices[0].Message.Content == "" || a.Usage.PromptTokens == 0 || a.Usage.CompletionTokens == 0 ||
		a.Usage.TotalTokens != a.Usage.PromptTokens+a.Usage.CompletionTokens {
		t.Fatalf("reply %+v", a)
	}
	if f := a.Choices[0].FinishReason; f != "length" && f != "stop" {
		t.Fatalf("finish %q", f)
	}
	b, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Choices[0].Message.Content != a.Choices[0].Message.Content {
		t.Fatalf("cached reply %q, first %q", b.Choices[0].Message.Content, a.Choices[0].Message.Content)
	}
	if cached := b.Usage.PromptTokensDetails.CachedTokens; cached == 0 || cached >= b.Usage.PromptTokens {
		t.Fatalf("second identical request: cached_tokens %d of %d", cached, b.Usage.PromptTokens)
	}
}

// TestChatStreaming: the streamed reply, accumulated by the official
// client, is the non-streamed one; the first chunk carries the role, the
// last the usage.
func TestChatStreaming(t *testing.T) {
	_, c := start(t, server.Options{NoCache: true})
	ctx := context.Background()
	p := greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("package main\n\nfunc main() {")}, 32)
	whole, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	n := 0
	for s.Next() {
		ch := s.Current()
		if n == 0 && (len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant") {
			t.Fatalf("first chunk %+v", ch)
		}
		acc.AddChunk(ch)
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, whole.Choices[0].Message.Content; got != want {
		t.Fatalf("streamed %q, whole %q", got, want)
	}
	if acc.Usage.CompletionTokens != whole.Usage.CompletionTokens || acc.Usage.PromptTokens != whole.Usage.PromptTokens {
		t.Fatalf("streamed usage %+v, whole %+v", acc.Usage, whole.Usage)
	}
}

// TestCompletions: /v1/completions continues a plain text, whole and
// streamed alike.
func TestCompletions(t *testing.T) {
	_, c := start(t, server.Options{NoCache: true})
	ctx := context.Background()
	p := openai.CompletionNewParams{Model: "forge-tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("def fib(n):")},
		MaxTokens: openai.Int(16), Temperature: openai.Float(0)}
	r, err := c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Choices) != 1 || r.Choices[0].Text == "" || r.Usage.CompletionTokens != 16 {
		t.Fatalf("%+v", r)
	}
	s := c.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Text)
		}
	}
	if s.Err() != nil || text.String() != r.Choices[0].Text {
		t.Fatalf("streamed %q (%v), whole %q", text.String(), s.Err(), r.Choices[0].Text)
	}
	// Legacy logprobs: one per token, the tokens spell the text, and a
	// greedy token is its step's most likely candidate.
	p.Logprobs = openai.Int(2)
	r, err = c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	lp := r.Choices[0].Logprobs
	if len(lp.Tokens) != 16 || len(lp.TokenLogprobs) != 16 || len(lp.TopLogprobs) != 16 || strings.Join(lp.Tokens, "") != r.Choices[0].Text {
		t.Fatalf("logprobs %+v for %q", lp, r.Choices[0].Text)
	}
	for i, top := range lp.TopLogprobs {
		best := math.Inf(-1)
		for _, v := range top {
			best = math.Max(best, v)
		}
		if len(top) == 0 || lp.TokenLogprobs[i] != best || lp.TextOffset[i] != int64(len(strings.Join(lp.Tokens[:i], ""))) {
			t.Fatalf("step %d: %v, top %v, offset %d", i, lp.TokenLogprobs[i], top, lp.TextOffset[i])
		}
	}
	// Streamed, the chunks' logprobs put together are the whole reply's,
	// offsets counting from the start of the reply.
	st := c.Completions.NewStreaming(ctx, p)
	var toks []string
	var vals []float64
	var offs []int64
	for st.Next() {
		for _, ch := range st.Current().Choices {
			toks = append(toks, ch.Logprobs.Tokens...)
			vals = append(vals, ch.Logprobs.TokenLogprobs...)
			offs = append(offs, ch.Logprobs.TextOffset...)
		}
	}
	if st.Err() != nil || !slices.Equal(toks, lp.Tokens) || !slices.Equal(vals, lp.TokenLogprobs) || !slices.Equal(offs, lp.TextOffset) {
		t.Fatalf("streamed logprobs %v %v %v (%v), whole %v %v %v", toks, vals, offs, st.Err(), lp.Tokens, lp.TokenLogprobs, lp.TextOffset)
	}
}

// TestStreamLogprobs: a streamed chat reply with logprobs (and 3
// candidates) carries each token's entry in its chunks, the entries put
// together being exactly the whole reply's, with reasoning (thinking on)
// and a stop string held back in the stream.
func TestStreamLogprobs(t *testing.T) {
	_, c := start(t, server.Options{})
	ctx := context.Background()
	for _, think := range []bool{false, true} {
		p := greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("Write a Go loop that prints ten numbers.")}, 48)
		p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("}\n}")}
		if think {
			p.SetExtraFields(map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}})
		}
		whole, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want := whole.Choices[0].Logprobs.Content
		st := c.Chat.Completions.NewStreaming(ctx, p)
		var got []openai.ChatCompletionTokenLogprob
		for st.Next() {
			for _, ch := range st.Current().Choices {
				got = append(got, ch.Logprobs.Content...)
			}
		}
		if st.Err() != nil || len(want) == 0 || !sameLogprobs(got, want) {
			t.Fatalf("think %v: %d streamed entries (%v), %d whole", think, len(got), st.Err(), len(want))
		}
	}
}

// TestErrors: every error is OpenAI's object with the right status, as
// the official client reads it.
func TestErrors(t *testing.T) {
	_, c := start(t, server.Options{MaxBody: 1 << 16})
	ctx := context.Background()
	status := func(err error) (int, string) {
		var ae *openai.Error
		if !errors.As(err, &ae) {
			t.Fatalf("not an API error: %v", err)
		}
		return ae.StatusCode, ae.Code
	}
	long := strings.Repeat("func f() { return } ", 4000) // 80,000 bytes, > 4096 tokens
	_, err := c.Chat.Completions.New(ctx, greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage(long)}, 8))
	if code, _ := status(err); code != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the limit: status %d, want 413", code)
	}
	url2, c2 := start(t, server.Options{})
	_, err = c2.Chat.Completions.New(ctx, greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage(long)}, 8))
	if code, name := status(err); code != 400 || name != "context_length_exceeded" {
		t.Errorf("prompt over the context: %d %q", code, name)
	}
	_, err = c.Chat.Completions.New(ctx, greedy(nil, 8))
	if code, _ := status(err); code != 400 {
		t.Errorf("no messages: %d", code)
	}
	_, c3 := start(t, server.Options{MaxPrompt: 20})
	_, err = c3.Chat.Completions.New(ctx, greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("one two three four five six seven eight nine ten")}, 8))
	if code, name := status(err); code != 400 || name != "prompt_too_long" {
		t.Errorf("prompt over the server's limit: %d %q", code, name)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/nowhere", "", 404},
		{"POST", "/v1/chat/completions", "{not json", 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"hi"}]}`, 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stop":[""]}`, 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":-1}`, 400},
		{"POST", "/v1/completions", `{"prompt":""}`, 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, 400},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21}`, 400},
		{"POST", "/v1/completions", `{"prompt":"hi","logprobs":-1}`, 400},
	} {
		req, _ := http.NewRequest(tc.method, url2+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), `"error":{`) || !strings.Contains(string(body), `"message":`) {
			t.Errorf("%s %s %s: %d %s, want %d and an error object", tc.method, tc.path, tc.body, resp.StatusCode, body, tc.status)
		}
	}
}

// TestAPIKey: with a key, every route but /health needs it.
func TestAPIKey(t *testing.T) {
	url, c := start(t, server.Options{APIKey: "sesame"})
	if _, err := c.Models.List(context.Background()); err != nil {
		t.Fatalf("with the key: %v", err)
	}
	for _, path := range []string{"/v1/models", "/metrics", "/v1/chat/completions"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the key: %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health without the key: %d", resp.StatusCode)
	}
}

// TestQueueAndDisconnect: with one slot and no queue, a second request
// while one streams gets 429 with Retry-After; a client that leaves
// mid-stream frees the slot at once, and /metrics counts it all.
func TestQueueAndDisconnect(t *testing.T) {
	url, c := start(t, server.Options{Slots: 1, Queue: -1, NoCache: true})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"messages":[{"role":"user","content":"Count to a thousand."}],"max_tokens":3000,"temperature":0,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the stream has begun
		t.Fatal(err)
	}
	_, err = c.Chat.Completions.New(context.Background(), greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, 4))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("second request while the only slot streams: %v", err)
	}
	cancel() // the client leaves mid-stream
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = c.Chat.Completions.New(context.Background(), greedy([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, 4))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed after the client left: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(m.Body)
	m.Body.Close()
	for _, want := range []string{`forge_requests_total{route="chat",status="429"}`, `forge_requests_total{route="chat",status="200"}`, "forge_decode_tokens_per_second_bucket", "forge_active_slots 0"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestCachedEqualsUncached: randomized multi-turn conversations sent to a
// server with its prompt cache and to one that starts every request from
// an empty state get the same replies (greedy and seeded sampling) and the
// same logprobs at every step, bit for bit, turn after turn, with other
// conversations in between on the cached server's two slots. (The engine
// test generate.TestCacheExact sends hundreds and compares whole logits.)
func TestCachedEqualsUncached(t *testing.T) {
	_, cached := start(t, server.Options{Slots: 2})
	_, plain := start(t, server.Options{Slots: 1, NoCache: true})
	ctx := context.Background()
	g := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("func main package return if else for range the river a of code print string int error nil go test")
	phrase := func() string {
		n := 3 + g.IntN(12)
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[g.IntN(len(words))])
		}
		return b.String()
	}
	convs := 12
	if testing.Short() {
		convs = 4
	}
	reused := 0
	// One conversation at a time (its turns reuse its slot's state), then
	// all of them again with every turn interleaved with the others (the
	// slots' states belong to other conversations in between): the replies
	// must equal the uncached server's either way.
	for _, interleave := range []bool{false, true} {
		hist := make([][]openai.ChatCompletionMessageParamUnion, convs)
		for i := range hist {
			if g.IntN(2) == 0 {
				hist[i] = append(hist[i], openai.SystemMessage(phrase()))
			}
		}
		step := func(i, turn int) {
			hist[i] = append(hist[i], openai.UserMessage(phrase()))
			p := greedy(hist[i], int64(4+g.IntN(20)))
			p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
			if g.IntN(2) == 0 {
				p.Temperature, p.Seed = openai.Float(0.9), openai.Int(int64(g.Uint32()))
			}
			a, err := cached.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := plain.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if a.Choices[0].Message.Content != b.Choices[0].Message.Content || a.Usage.CompletionTokens != b.Usage.CompletionTokens ||
				!sameLogprobs(a.Choices[0].Logprobs.Content, b.Choices[0].Logprobs.Content) || len(a.Choices[0].Logprobs.Content) == 0 {
				t.Fatalf("interleaved %v, conversation %d turn %d: cached %q, uncached %q (logprobs equal: %v)", interleave, i, turn,
					a.Choices[0].Message.Content, b.Choices[0].Message.Content, sameLogprobs(a.Choices[0].Logprobs.Content, b.Choices[0].Logprobs.Content))
			}
			if b.Usage.PromptTokensDetails.CachedTokens != 0 {
				t.Fatalf("the uncached server reused %d tokens", b.Usage.PromptTokensDetails.CachedTokens)
			}
			if turn > 0 && !interleave {
				reused += int(a.Usage.PromptTokensDetails.CachedTokens)
			}
			hist[i] = append(hist[i], openai.AssistantMessage(a.Choices[0].Message.Content))
		}
		if interleave {
			for turn := range 3 {
				for i := range hist {
					step(i, turn)
				}
			}
		} else {
			for i := range hist {
				for turn := range 3 {
					step(i, turn)
				}
			}
		}
	}
	if reused == 0 {
		t.Fatal("the cached server never reused a prompt prefix on a conversation's next turn")
	}
	t.Logf("2 × %d conversations × 3 turns equal; %d prompt tokens reused on next turns", convs, reused)
}

// sameLogprobs compares two replies' logprobs exactly (JSON carries a
// float64 exactly).
func sameLogprobs(a, b []openai.ChatCompletionTokenLogprob) bool {
	return slices.EqualFunc(a, b, func(x, y openai.ChatCompletionTokenLogprob) bool {
		return x.Token == y.Token && x.Logprob == y.Logprob && slices.Equal(x.Bytes, y.Bytes) &&
			slices.EqualFunc(x.TopLogprobs, y.TopLogprobs, func(p, q openai.ChatCompletionTokenLogprobTopLogprob) bool {
				return p.Token == q.Token && p.Logprob == q.Logprob
			})
	})
}

// TestCORS: CORS is off by default; an allowed origin may read /health and
// /v1/models (and preflight them), never the completion routes.
func TestCORS(t *testing.T) {
	do := func(url, method, path, origin string) *http.Response {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":1}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	off, _ := start(t, server.Options{})
	if h := do(off, "GET", "/health", "http://ok.example").Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Errorf("CORS off: /health allows %q", h)
	}
	on, _ := start(t, server.Options{CORSOrigins: []string{"http://ok.example"}})
	for _, c := range []struct {
		method, path, origin string
		status               int
		allow                bool
	}{
		{"GET", "/health", "http://ok.example", 200, true},
		{"GET", "/v1/models", "http://ok.example", 200, true},
		{"GET", "/health", "http://evil.example", 200, false},
		{"OPTIONS", "/health", "http://ok.example", 204, true},
		{"OPTIONS", "/health", "http://evil.example", 403, false},
		{"OPTIONS", "/v1/chat/completions", "http://ok.example", 403, false},
		{"POST", "/v1/chat/completions", "http://ok.example", 200, false},
	} {
		resp := do(on, c.method, c.path, c.origin)
		got := resp.Header.Get("Access-Control-Allow-Origin")
		if resp.StatusCode != c.status || (got == c.origin) != c.allow || (!c.allow && got != "") {
			t.Errorf("%s %s from %s: %d, Allow-Origin %q", c.method, c.path, c.origin, resp.StatusCode, got)
		}
	}
}

// TestThinking: with enable_thinking the reply is reasoning until
// "</think>" (forge-tiny does not close it in 24 tokens), whole and
// streamed alike; a non-boolean enable_thinking is a 400 and other
// template variables (reasoning_effort) pass through.
func TestThinking(t *testing.T) {
	url, _ := start(t, server.Options{NoCache: true})
	post := func(body string) (int, string) {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	req := `{"messages":[{"role":"user","content":"Why is the sky blue?"}],"max_tokens":24,"temperature":0,` +
		`"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"low"%s}`
	code, whole := post(fmt.Sprintf(req, ""))
	var r struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Reasoning string  `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal([]byte(whole), &r) != nil || r.Choices[0].Message.Reasoning == "" {
		t.Fatalf("%d %s", code, whole)
	}
	code, stream := post(fmt.Sprintf(req, `,"stream":true`))
	var reasoning strings.Builder
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Reasoning string `json:"reasoning_content"`
					Content   string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range ch.Choices {
			reasoning.WriteString(c.Delta.Reasoning)
		}
	}
	if code != 200 || reasoning.String() != r.Choices[0].Message.Reasoning {
		t.Fatalf("streamed reasoning %q, whole %q", reasoning.String(), r.Choices[0].Message.Reasoning)
	}
	if code, body := post(`{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":"yes"}}`); code != 400 {
		t.Fatalf("enable_thinking \"yes\": %d %s", code, body)
	}
}
