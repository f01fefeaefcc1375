package generate

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"forge/model"
	"forge/sample"
	"forge/source"
	"forge/tokenizer"
)

var (
	tinyOnce sync.Once
	tinyM    *model.Model
	tinyTok  *tokenizer.Tokenizer
	tinyErr  error
)

// tiny loads the bundled forge-tiny checkpoint and tokenizer once.
func tiny(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	tinyOnce.Do(func() {
		dir := filepath.Join("..", "models", "forge-tiny")
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

// greedyRef is the plain decode loop: argmax of each step's logits, fed
// back one token at a time, until n tokens or an EOS id.
func greedyRef(m *model.Model, tok *tokenizer.Tokenizer, prompt []int, n int) []int {
	s := m.NewState()
	lg := m.Forward(s, prompt)
	logits := lg.Row(lg.Rows - 1)
	var out []int
	for len(out) < n {
		id := sample.Argmax(logits)
		if tok.IsEOS(id) {
			break
		}
		out = append(out, id)
		logits = m.Forward(s, []int{id}).Row(0)
	}
	return out
}

func mustPrompt(t *testing.T, tok *tokenizer.Tokenizer, text string) []int {
	ids, err := TextPrompt(tok, text)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestGreedyMatchesPlainLoop: a greedy reply is the argmax decode loop's
// (prefill by chunks of 512 and the head of the last row only give the
// same argmax here), its streamed text is its Result.Text and the
// tokenizer's decode of its ids, and MaxTokens ends it with "length".
func TestGreedyMatchesPlainLoop(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "def fib(n):\n    ")
	want := greedyRef(m, tok, prompt, 40)
	e := New(m, tok, Options{})
	var streamed strings.Builder
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 40, LoopGuard: -1},
		func(s string) error { streamed.WriteString(s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, want) {
		t.Fatalf("tokens %v\nwant   %v", res.Tokens, want)
	}
	dec, _ := tok.Decode(res.Tokens)
	if streamed.String() != res.Text || res.Text != dec {
		t.Fatalf("streamed %q, text %q, decode %q", streamed.String(), res.Text, dec)
	}
	if len(want) == 40 && res.Finish != FinishLength || len(want) < 40 && res.Finish != FinishStop {
		t.Fatalf("finish %q after %d tokens", res.Finish, len(res.Tokens))
	}
	mt := res.Metrics
	if mt.PromptTokens != len(prompt) || mt.PrefillTokens != len(prompt) || mt.CachedTokens != 0 || mt.GeneratedTokens != len(res.Tokens) || mt.ContextFull {
		t.Fatalf("metrics %+v", mt)
	}
}

// TestStopTokenAndString: a stop token ends the reply before it, a stop
// string cuts the text before its match and never streams any of it.
func TestStopTokenAndString(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "The history of the city")
	ref := greedyRef(m, tok, prompt, 30)
	k := 10
	for slices.Index(ref, ref[k]) < k {
		k++
	}
	e := New(m, tok, Options{})
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 30, StopTokens: []int{ref[k]}}, nil)
	if err != nil || res.Finish != FinishStop || !slices.Equal(res.Tokens, ref[:k]) {
		t.Fatalf("stop token: %v %q %v, want %v", err, res.Finish, res.Tokens, ref[:k])
	}
	full, _ := tok.Decode(ref)
	stop := full[len(full)/2 : len(full)/2+3]
	var streamed strings.Builder
	res, err = e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 30, Stop: []string{stop}},
		func(s string) error { streamed.WriteString(s); return nil })
	want := full[:strings.Index(full, stop)]
	if err != nil || res.Finish != FinishStop || res.Text != want || streamed.String() != want {
		t.Fatalf("stop string %q: %v %q text %q streamed %q, want %q", stop, err, res.Finish, res.Text, streamed.String(), want)
	}
}

// TestThinkBudget: at the budget the closing phrase is injected once,
// streamed, and counted in the reply's tokens.
func TestThinkBudget(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n<think>\n")
	e := New(m, tok, Options{})
	phrase := tok.Encode(ThinkClose)
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 8 + len(phrase) + 5, ThinkBudget: 8, LoopGuard: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Metrics.ThinkInjected || len(res.Tokens) < 8+len(phrase) || !slices.Equal(res.Tokens[8:8+len(phrase)], phrase) {
		t.Fatalf("injected %v, tokens %v", res.Metrics.ThinkInjected, res.Tokens)
	}
	if strings.Count(res.Text, "</think>") != 1+strings.Count(res.Text[strings.Index(res.Text, ThinkClose)+len(ThinkClose):], "</think>") {
		t.Fatalf("text %q", res.Text)
	}
}

// TestCancelKeepsState: a reply cancelled from the text callback ends
// with FinishCancel and the callback's error; the engine's next turn then
// resumes from its turn snapshot and is exactly a cold engine's.
func TestCancelKeepsState(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "Once upon a time")
	e := New(m, tok, Options{Chunk: 2}) // chunk boundaries are cut points: the turn snapshot sits at 2·⌊(n−1)/2⌋
	errPipe := errors.New("broken pipe")
	calls := 0
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 50, LoopGuard: -1}, func(string) error {
		if calls++; calls == 3 {
			return errPipe
		}
		return nil
	})
	if !errors.Is(err, errPipe) || res.Finish != FinishCancel {
		t.Fatalf("err %v finish %q", err, res.Finish)
	}
	// The next turn resumes from the turn snapshot, not from the
	// cancelled reply's tokens, and is exactly a cold engine's.
	next := append(slices.Clone(prompt), tok.Encode(" and")...)
	r2, got := stepLogits(t, e, Request{Prompt: next, MaxTokens: 3})
	_, want := stepLogits(t, New(m, tok, Options{Chunk: 2, NoReuse: true}), Request{Prompt: next, MaxTokens: 3})
	if r2.Metrics.CachedTokens != (len(prompt)-1)/2*2 || !logitsEqual(got, want) {
		t.Fatalf("after cancel: cached %d of %d; logits equal to a cold engine's: %v", r2.Metrics.CachedTokens, len(next), logitsEqual(got, want))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Generate(ctx, Request{Prompt: mustPrompt(t, tok, "New text")}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// TestSeededSampling: the same seed gives the same reply, another seed
// another one (40 tokens at temperature 1 on a 4160-token vocabulary).
func TestSeededSampling(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "import numpy as np\n")
	gen := func(seed uint64) []int {
		e := New(m, tok, Options{})
		res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 40, LoopGuard: -1,
			Sample: sample.Options{Temperature: 1, TopP: 0.95, TopK: 40, Seed: seed}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	a, b, c := gen(7), gen(7), gen(8)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seed 7: %v and %v; seed 8: %v", a, b, c)
	}
}

// TestBadRequests: each is refused before any work, with a clear error.
func TestBadRequests(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, tok, Options{})
	long := make([]int, m.Config().MaxContext)
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"empty prompt", Request{}, "empty"},
		{"prompt fills the context", Request{Prompt: long}, "no room"},
		{"id outside the vocabulary", Request{Prompt: []int{1, m.Config().Vocab}}, "outside the vocabulary"},
		{"negative max tokens", Request{Prompt: []int{1}, MaxTokens: -1}, "negative"},
		{"bad top-p", Request{Prompt: []int{1}, Sample: sample.Options{Temperature: 1, TopP: 2}}, "top"},
	}
	for _, tc := range tests {
		_, err := e.Generate(context.Background(), tc.req, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: long}, nil); !errors.Is(err, model.ErrContext) {
		t.Errorf("context overflow does not wrap model.ErrContext: %v", err)
	}
	if _, err := TextPrompt(tok, "a\xffb"); !errors.Is(err, tokenizer.ErrInvalidUTF8) {
		t.Errorf("non-UTF-8 prompt: %v", err)
	}
	if _, err := (Chat{Messages: []byte(`{"role":"user"}`)}).Prompt(tok); err == nil {
		t.Error("messages that are not a list were accepted")
	}
}

// TestLoopGuard: greedy decoding of forge-tiny after "def fib(n):" falls
// into a loop; the guard ends the reply at a check (64 tokens, then every
// 32) with the period it saw, and the reply's tail is indeed periodic.
// With the guard off the same reply runs to MaxTokens.
func TestLoopGuard(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "def fib(n):")
	e := New(m, tok, Options{})
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 400}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, p := len(res.Tokens), res.Metrics.LoopPeriod
	if res.Finish != FinishLoop || p < LoopMinPeriod || (n-LoopFirstCheck)%LoopEvery != 0 {
		t.Fatalf("finish %q, period %d after %d tokens", res.Finish, p, n)
	}
	tail := res.Tokens[n-LoopReps*p:]
	for i := p; i < len(tail); i++ {
		if tail[i] != tail[i-p] {
			t.Fatalf("tail not %d-periodic at %d", p, i)
		}
	}
	off, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 100, LoopGuard: -1}, nil)
	if err != nil || off.Finish != FinishLength || len(off.Tokens) != 100 {
		t.Fatalf("guard off: %v, finish %q after %d tokens", err, off.Finish, len(off.Tokens))
	}
}

// TestThinkBudgetPastMaxTokens: when the closing phrase does not fit in
// what MaxTokens leaves, the reply ends with "length" at the budget, and
// neither the context is said to be full nor the thinking closed.
func TestThinkBudgetPastMaxTokens(t *testing.T) {
	m, tok := tiny(t)
	prompt := mustPrompt(t, tok, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n")
	e := New(m, tok, Options{})
	res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 8, ThinkBudget: 4, LoopGuard: -1}, nil)
	if err != nil || res.Finish != FinishLength || len(res.Tokens) != 4 || res.Metrics.ContextFull || res.Metrics.ThinkInjected {
		t.Fatalf("%v: finish %q, %d tokens, metrics %+v", err, res.Finish, len(res.Tokens), res.Metrics)
	}
}
