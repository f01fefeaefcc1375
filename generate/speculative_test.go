package generate

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"forge/internal/tinylut"
	"forge/model"
	"forge/source"
	"forge/tokenizer"
)

var (
	draftOnce sync.Once
	draftM    *model.Model
	draftTok  *tokenizer.Tokenizer
	draftErr  error
)

// tinyDraft loads the bundled forge-tiny-draft checkpoint and tokenizer once.
func tinyDraft(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	draftOnce.Do(func() {
		dir := filepath.Join("..", "models", "forge-tiny-draft")
		draftM, _, draftErr = source.Load(dir)
		if draftErr == nil {
			draftTok, draftErr = tokenizer.Load(dir)
		}
	})
	if draftErr != nil {
		t.Fatal(draftErr)
	}
	return draftM, draftTok
}

// codePrompt is the first lines of the held-out Go code.
func codePrompt(t *testing.T, tok *tokenizer.Tokenizer, lines int) []int {
	data, err := os.ReadFile(filepath.Join("..", "data", "code-heldout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.SplitAfter(string(data), "\n")[:lines], "")
	return mustPrompt(t, tok, text)
}

func generate(t *testing.T, e *Engine, req Request) Result {
	t.Helper()
	var streamed strings.Builder
	res, err := e.Generate(context.Background(), req, func(s string) error { streamed.WriteString(s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != res.Text {
		t.Fatalf("streamed text differs from the result's")
	}
	return res
}

// TestDraftGreedyIsPlain: greedy replies with a drafter are plain
// decoding's token for token — 400 tokens of code from forge-tiny (bf16,
// and LUT4 with int8 activations) drafted by forge-tiny-draft, with the
// draft length adapting and fixed at 1, 4 and 16 — with the same text and
// finish, and the drafter saves target calls (fixed k = 4: fewer calls
// than tokens). The metrics add up: every round is in the histogram, kept
// ≤ drafted.
func TestDraftGreedyIsPlain(t *testing.T) {
	dm, dtok := tinyDraft(t)
	m, tok := tiny(t)
	if err := CheckDraft(m, tok, dm, dtok); err != nil {
		t.Fatal(err)
	}
	lut4, err := tinylut.Load(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := codePrompt(t, tok, 20)
	req := Request{Prompt: prompt, MaxTokens: 400, LoopGuard: -1}
	for _, target := range []struct {
		name string
		m    *model.Model
		act  model.Act
	}{{"bf16", m, model.ActFloat32}, {"lut4-int8", lut4, model.ActInt8}} {
		plain := generate(t, New(target.m, tok, Options{Act: target.act}), req)
		if len(plain.Tokens) < 100 {
			t.Fatalf("%s: plain reply of %d tokens only", target.name, len(plain.Tokens))
		}
		for _, o := range []Options{
			{Draft: dm},
			{Draft: dm, DraftK: 1, DraftFixed: true},
			{Draft: dm, DraftK: 4, DraftFixed: true},
			{Draft: dm, DraftK: 16, DraftFixed: true},
		} {
			o.Act = target.act
			res := generate(t, New(target.m, tok, o), req)
			name := target.name + "/k=" + itoa(o.DraftK)
			if !slices.Equal(res.Tokens, plain.Tokens) || res.Text != plain.Text || res.Finish != plain.Finish {
				t.Fatalf("%s: the drafted reply differs from plain decoding's (%d tokens, first difference at %d)",
					name, len(res.Tokens), firstDiff(res.Tokens, plain.Tokens))
			}
			mt := res.Metrics
			rounds := 0
			for _, n := range mt.AcceptHist {
				rounds += n
			}
			if mt.Kept > mt.Drafted || mt.TargetCalls < rounds || mt.DraftFailed != "" {
				t.Fatalf("%s: metrics %+v", name, mt)
			}
			if o.DraftK == 4 && mt.TargetCalls >= len(res.Tokens) {
				t.Fatalf("%s: %d target calls for %d tokens", name, mt.TargetCalls, len(res.Tokens))
			}
			t.Logf("%s: %d tokens, %d target calls, kept %d of %d drafts, histogram %v",
				name, len(res.Tokens), mt.TargetCalls, mt.Kept, mt.Drafted, mt.AcceptHist)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDraftEndings: with a drafter, a stop string, a stop token, the
// thinking budget and the token limit end greedy replies exactly where
// plain decoding ends them (a draft block never runs past them), and the
// engine's next reply (the same conversation continued) is plain
// decoding's too.
func TestDraftEndings(t *testing.T) {
	dm, _ := tinyDraft(t)
	m, tok := tiny(t)
	prompt := codePrompt(t, tok, 12)
	plain := generate(t, New(m, tok, Options{}), Request{Prompt: prompt, MaxTokens: 120, LoopGuard: -1})
	text := plain.Text
	// A stop string and a stop token from the middle of the plain reply.
	stop := strings.TrimSpace(text[len(text)/2:])[:4]
	stopTok := plain.Tokens[len(plain.Tokens)*2/3]
	think := mustPrompt(t, tok, "<think>\nLet me think about the code.\n")
	reqs := map[string]Request{
		"stop string": {Prompt: prompt, MaxTokens: 120, LoopGuard: -1, Stop: []string{stop}},
		"stop token":  {Prompt: prompt, MaxTokens: 120, LoopGuard: -1, StopTokens: []int{stopTok}},
		"max tokens":  {Prompt: prompt, MaxTokens: 37, LoopGuard: -1},
		"think":       {Prompt: think, MaxTokens: 80, LoopGuard: -1, ThinkBudget: 5},
	}
	for name, req := range reqs {
		want := generate(t, New(m, tok, Options{}), req)
		e := New(m, tok, Options{Draft: dm, DraftK: 5, DraftFixed: true})
		got := generate(t, e, req)
		if !slices.Equal(got.Tokens, want.Tokens) || got.Text != want.Text || got.Finish != want.Finish ||
			got.StopToken != want.StopToken || got.Metrics.ThinkInjected != want.Metrics.ThinkInjected {
			t.Fatalf("%s: drafted %q (%s), plain %q (%s)", name, got.Text, got.Finish, want.Text, want.Finish)
		}
		// The conversation goes on from the engine's state.
		next := append(append(slices.Clone(req.Prompt), got.Tokens...), mustPrompt(t, tok, "\n// more\n")...)
		req2 := Request{Prompt: next, MaxTokens: 30, LoopGuard: -1}
		got2 := generate(t, e, req2)
		want2 := generate(t, New(m, tok, Options{}), req2)
		if !slices.Equal(got2.Tokens, want2.Tokens) {
			t.Fatalf("%s: the next reply differs from plain decoding's", name)
		}
	}
	if _, ok := reqs["think"]; ok {
		res := generate(t, New(m, tok, Options{Draft: dm}), reqs["think"])
		if !res.Metrics.ThinkInjected {
			t.Fatalf("the thinking budget did not close the thinking: %q", res.Text)
		}
	}
}

// TestDraftFailure: a drafter whose context is shorter than the reply
// fails mid-reply; the reply goes on by plain decoding, equal to plain
// decoding's, and the metrics say why drafting stopped.
func TestDraftFailure(t *testing.T) {
	m, tok := tiny(t)
	prompt := codePrompt(t, tok, 8)
	dir := t.TempDir()
	src := filepath.Join("..", "models", "forge-tiny-draft")
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cfg map[string]any
	data, _ := os.ReadFile(filepath.Join(src, "config.json"))
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["text_config"].(map[string]any)["max_position_embeddings"] = len(prompt) + 40
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	short, sc, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	req := Request{Prompt: prompt, MaxTokens: 150, LoopGuard: -1}
	want := generate(t, New(m, tok, Options{}), req)
	got := generate(t, New(m, tok, Options{Draft: short, DraftK: 4, DraftFixed: true}), req)
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Fatalf("the reply after the drafter failed differs from plain decoding's")
	}
	if mt := got.Metrics; !strings.Contains(mt.DraftFailed, "context") || mt.Drafted == 0 {
		t.Fatalf("drafting did not fail on the context, or never ran: %+v", mt)
	}
}

// TestCheckDraft: a drafter whose tokenizer gives an id another token is
// refused, naming the id; so are another vocabulary size and a draft
// length outside 1…16.
func TestCheckDraft(t *testing.T) {
	m, tok := tiny(t)
	dm, _ := tinyDraft(t)
	dir := t.TempDir()
	src := filepath.Join("..", "models", "forge-tiny-draft")
	data, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Swap the ids of two vocabulary entries.
	swapped := strings.NewReplacer(`"de": 300`, `"de": 301`, `"Ġ=": 301`, `"Ġ=": 300`).Replace(string(data))
	if swapped == string(data) {
		t.Fatal("the vocabulary entries to swap were not found")
	}
	data = []byte(swapped)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer_config.json", "generation_config.json"} {
		cfg, _ := os.ReadFile(filepath.Join(src, f))
		if err := os.WriteFile(filepath.Join(dir, f), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDraft(m, tok, dm, other)
	if err == nil || !strings.Contains(err.Error(), "token 300") {
		t.Fatalf("a tokenizer with two ids swapped: %v", err)
	}
	if other.Fingerprint() == tok.Fingerprint() {
		t.Fatal("the fingerprints of different id spaces agree")
	}
	_, dtok := tinyDraft(t)
	if dtok.Fingerprint() != tok.Fingerprint() {
		t.Fatal("forge-tiny and its drafter have different tokenizer fingerprints")
	}
	for _, k := range []int{0, -1, 17} {
		if CheckDraftK(k) == nil {
			t.Errorf("draft length %d accepted", k)
		}
	}
}

// TestAdapt: the draft length follows the measured costs and acceptance.
// With a drafter step at 5% of a target step and verify rows at 10%, a
// high acceptance picks long drafts and a middling one shorter drafts; a
// collapsed acceptance switches to plain steps, probing again at doubling
// intervals (a handful of probe rounds in 4,000 tokens); and costs at
// which drafting could not pay even if every draft were kept stop drafting
// for the reply (TestAdaptRemeasures: when they are timed again).
func TestAdapt(t *testing.T) {
	const step = time.Millisecond
	run := func(alpha float64, draft, row time.Duration, tokens int) (ks []int) {
		var a adapt
		a.init(MaxDraftK, false)
		a.reset()
		r := rand.New(rand.NewPCG(1, 2))
		for n := 0; n < tokens; {
			k := a.next(n)
			ks = append(ks, k)
			if k == 0 {
				a.plainStep(step)
				n++
				continue
			}
			kept := 0
			for kept < k && r.Float64() < alpha {
				kept++
			}
			a.round(k, kept, time.Duration(k)*draft, step+time.Duration(k)*row)
			n += kept + 1
		}
		return ks
	}
	last := func(ks []int) int { return ks[len(ks)-1] }
	if k := last(run(0.95, step/20, step/10, 400)); k < 8 {
		t.Errorf("acceptance 0.95: k = %d, want a long draft", k)
	}
	if k := last(run(0.6, step/20, step/10, 400)); k < 1 || k > 5 {
		t.Errorf("acceptance 0.6: k = %d, want a short draft", k)
	}
	ks := run(0, step/20, step/10, 4000)
	probes := 0
	for _, k := range ks[10:] {
		if k > 0 {
			probes++
		}
	}
	if last(ks) != 0 || probes > 8 {
		t.Errorf("acceptance 0: %d probe rounds in 4,000 tokens, last k %d", probes, last(ks))
	}
	ks = run(1, step/2, step, 400)
	if slices.ContainsFunc(ks[10:], func(k int) bool { return k > 0 }) {
		t.Errorf("unpayable costs: drafting went on (%v)", ks)
	}
}

// TestAdaptRemeasures: costs that rule drafting out (every verify row as
// dear as a step) stop drafting for the reply, and are timed again at the
// start of a reply once adaptPlainMax plain steps have passed (counted over
// replies), the new times replacing the stale ones: when the dear costs
// were a cold start's or a busy moment's, drafting resumes at the first
// such probe after they fall (to a drafter step at 5% of a target step and
// rows at 10%, 95% of the drafts kept) and runs no plain steps after it
// but the pairs that time c_step again (at most two in adaptRestep
// rounds); when they stay, each probe costs one round, at a reply's start.
func TestAdaptRemeasures(t *testing.T) {
	const step = time.Millisecond
	const replies, length = 12, 300
	for _, falls := range []bool{false, true} {
		var a adapt
		a.init(MaxDraftK, false)
		r := rand.New(rand.NewPCG(3, 4))
		dear := true
		rounds, probes, resumed, plain, plainAfter, roundsAfter := 0, 0, -1, 0, 0, 0
		for reply := range replies {
			a.reset()
			for n := 0; n < length; {
				k := a.next(n)
				if k == 0 {
					a.plainStep(step)
					n++
					plain++
					if resumed >= 0 {
						plainAfter++
					}
					continue
				}
				draft, row := step/2, step
				if !dear {
					draft, row = step/20, step/10
					if resumed < 0 {
						resumed = reply*length + n
					}
				}
				if resumed >= 0 {
					roundsAfter++
				}
				if rounds >= 2 && dear {
					probes++
					if n != 0 {
						t.Errorf("a probe round at token %d of reply %d, want only at a reply's start", n, reply)
					}
				}
				kept := 0
				for kept < k && r.Float64() < 0.95 {
					kept++
				}
				a.round(k, kept, time.Duration(k)*draft, step+time.Duration(k)*row)
				if rounds++; rounds == 2 && falls {
					dear = false // the costs fall after the two measuring rounds
				}
				n += kept + 1
			}
		}
		switch {
		case falls && (resumed < 0 || resumed > adaptPlainMax+2*length):
			t.Errorf("costs that fell: drafting resumed at token %d, want by %d", resumed, adaptPlainMax+2*length)
		case falls && plainAfter > 2*(roundsAfter/adaptRestep+1):
			t.Errorf("costs that fell: %d plain steps in the %d rounds after drafting resumed", plainAfter, roundsAfter)
		case !falls && (probes < 2 || probes > plain/adaptPlainMax):
			t.Errorf("costs that stay too high: %d probe rounds in %d plain steps, want one at a reply's start every %d or more",
				probes, plain, adaptPlainMax)
		}
	}
}

// TestAdaptRetimesStep: when the first timed plain steps are a cold
// process's (ten times the steady step) and drafting then wins on paper
// from the first rounds, the plain steps adapt runs to time c_step again
// let it see that drafting loses (a drafter step at a quarter of a target
// step, each verify row at half, 75% of the drafts kept: E(k)/C(k) < 1/c_step
// for every k) and decode plain: over the last 1,000 of 3,000 tokens at
// most a few probe rounds draft. Without them it drafted to the end.
func TestAdaptRetimesStep(t *testing.T) {
	const step = time.Millisecond
	var a adapt
	a.init(MaxDraftK, false)
	a.reset()
	r := rand.New(rand.NewPCG(5, 6))
	plainSteps, lateRounds := 0, 0
	for n := 0; n < 3000; {
		k := a.next(n)
		if k == 0 {
			d := step
			if plainSteps++; plainSteps <= 2 {
				d = 10 * step // the cold process
			}
			a.plainStep(d)
			n++
			continue
		}
		if n >= 2000 {
			lateRounds++
		}
		kept := 0
		for kept < k && r.Float64() < 0.75 {
			kept++
		}
		a.round(k, kept, time.Duration(k)*step/4, step+time.Duration(k)*step/2)
		n += kept + 1
	}
	if lateRounds > 4 {
		t.Errorf("%d drafting rounds in the last 1,000 tokens (c_step %v), want plain decoding", lateRounds, time.Duration(a.step*1e9))
	}
}

// TestDraftSelfKeepsAll: a model drafting for itself, greedy, keeps every
// draft of every round but a last one the reply's end cuts short: the
// drafter's State follows the target's exactly, the rows it feeds to
// catch up (the last draft and the target's token after a round that kept
// everything) included, and its rows are decode steps' bits as the
// target's verify rows are; afterwards the drafter has consumed what it
// records, a prefix of what the target consumed.
func TestDraftSelfKeepsAll(t *testing.T) {
	m, tok := tiny(t)
	req := Request{Prompt: codePrompt(t, tok, 12), MaxTokens: 150, LoopGuard: -1}
	for _, k := range []int{1, 4} {
		e := New(m, tok, Options{Draft: m, DraftK: k, DraftFixed: true})
		res := generate(t, e, req)
		if d := e.draft; d.s.Pos() != len(d.fed) || !slices.Equal(d.fed, e.fed[:min(len(d.fed), len(e.fed))]) {
			t.Errorf("k=%d: the drafter's State is at %d after feeding %d tokens, or they are not the target's", k, d.s.Pos(), len(d.fed))
		}
		mt := res.Metrics
		rounds := 0
		for _, n := range mt.AcceptHist {
			rounds += n
		}
		if short := rounds - mt.AcceptHist[k]; short > 1 || rounds < 10 {
			t.Errorf("k=%d: %d of %d rounds kept fewer than all %d drafts (histogram %v)", k, short, rounds, k, mt.AcceptHist)
		}
	}
}
