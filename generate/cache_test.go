package generate

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/internal/tinylut"
	"forge/model"
	"forge/sample"
)

// stepLogits generates req and returns the result and a copy of the
// logits of every sampled step.
func stepLogits(t *testing.T, e *Engine, req Request) (Result, [][]float32) {
	t.Helper()
	var steps [][]float32
	req.Logits = func(l []float32) { steps = append(steps, slices.Clone(l)) }
	res, err := e.Generate(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, steps
}

// logitsEqual compares every step's logits bit for bit.
func logitsEqual(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool {
		return slices.EqualFunc(x, y, func(p, q float32) bool { return math.Float32bits(p) == math.Float32bits(q) })
	})
}

// TestPlanCuts: segments start at turn starts that end a user turn or
// come at least MinSegment tokens into the segment before; cut points are the segment starts and the chunk
// boundaries counted from each; the State is stored at the first user
// turn when it starts a segment, and at the last cut point.
func TestPlanCuts(t *testing.T) {
	const turn, user = 9, 7
	e := &Engine{opts: Options{Chunk: 16}, turnID: turn, userID: user}
	prompt := func(turns map[int]int) []int {
		p := make([]int, 200)
		for i := range p {
			p[i] = 1
		}
		for at, role := range turns {
			p[at], p[at+1] = turn, role
		}
		return p
	}
	// Turn starts at 0, 10 (user), 70, 100, 140 (user), 150: 10 and 100
	// are too close to the segment start before them and end no user turn.
	p := e.plan(prompt(map[int]int{0: 2, 10: user, 70: 3, 100: 3, 140: user, 150: 3}))
	if !slices.Equal(p.segs, []int{70, 140, 150}) {
		t.Fatalf("segments %v, want [70 140 150]", p.segs)
	}
	want := []int{198, 182, 166, 150, 140, 134, 118, 102, 86, 70, 64, 48, 32, 16}
	if got := p.cuts(0); !slices.Equal(got, want) {
		t.Errorf("cuts %v, want %v", got, want)
	}
	if got := p.cuts(102); !slices.Equal(got, want[:7]) {
		t.Errorf("cuts above 102: %v, want %v", got, want[:7])
	}
	for c := range 201 {
		if p.isCut(c) != slices.Contains(want, c) {
			t.Errorf("isCut(%d) = %v", c, !slices.Contains(want, c))
		}
	}
	// The first user turn (at 10) does not start a segment: only the last cut.
	if got := p.stores(turn, user); !slices.Equal(got, []int{198}) {
		t.Errorf("stores %v, want [198]", got)
	}
	// A system prompt of 70 tokens: its end is kept too.
	q := e.plan(prompt(map[int]int{0: 2, 70: user, 100: 3, 150: user}))
	if !slices.Equal(q.segs, []int{70, 100}) {
		t.Fatalf("segments %v, want [70 100]", q.segs)
	}
	if got := q.stores(turn, user); !slices.Equal(got, []int{70, 196}) {
		t.Errorf("stores %v, want [70 196]", got)
	}
	if got := e.plan([]int{1, 2, 3, 4}).stores(turn, user); len(got) != 0 {
		t.Errorf("a one-chunk prompt stores %v", got)
	}
}

// TestCacheExact: hundreds of randomized multi-turn conversations (shared
// system prompts, chat and plain-text prompts, greedy and seeded sampling,
// thinking on and off; forge-tiny at two chunk sizes, and rounded to LUT4
// with int8 activations, whose short pieces run int8) sent to two engines that share a
// small Cache — so snapshots are evicted, and a conversation's next turn
// often lands on the engine that served another one — and to an engine
// that never reuses anything give the same tokens and the same logits at
// every step, bit for bit.
func TestCacheExact(t *testing.T) {
	bf16, tok := tiny(t)
	lut4, err := tinylut.Load(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	// Requests per chunk size: about 200 conversations in all, 40 s with
	// the vector kernels; the pure-Go run, which checks those kernels'
	// twins rather than the cache, sends a fifth as many.
	// The last setup drafts with forge-tiny-draft (every round three
	// tokens): its State is prefilled and cached by the same plan, so a
	// sampled reply, whose draws depend on the drafter's distributions, is
	// the same from the cache as without it.
	type setup struct {
		m        *model.Model
		act      model.Act
		chunk    int
		requests int
		draft    bool
	}
	setups := []setup{{bf16, model.ActFloat32, 0, 200, false}, {bf16, model.ActFloat32, 16, 100, false},
		{lut4, model.ActInt8, 0, 150, false}, {bf16, model.ActFloat32, 0, 80, true}}
	if !fastKernels {
		for i := range setups {
			setups[i].requests /= 5
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields("func main package return if else for range the river a of code print string int error nil go test list map value key loop")
	phrase := func(lo, hi int) string {
		n := lo + r.IntN(hi-lo)
		w := make([]string, n)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	systems := []string{phrase(30, 60), phrase(30, 60), phrase(5, 10)}
	convs := 0
	for _, su := range setups {
		m, chunk := su.m, su.chunk
		// A budget of about six snapshots of a 150-token prompt.
		probe := New(m, tok, Options{})
		probe.Generate(context.Background(), Request{Prompt: mustPrompt(t, tok, phrase(150, 151)), MaxTokens: 1}, nil)
		cache := NewCache(6 * probe.s.Snapshot().Bytes())
		o := Options{Chunk: chunk, Act: su.act, Cache: cache}
		if su.draft {
			o.Draft, _ = tinyDraft(t)
			o.DraftK, o.DraftFixed = 3, true
		}
		cached := []*Engine{New(m, tok, o), New(m, tok, o)}
		o.Cache, o.NoReuse = nil, true
		cold := New(m, tok, o)
		type conv struct {
			msgs  []map[string]any
			text  []int // a plain-text conversation's ids so far
			think bool
			plain bool
		}
		cs := make([]*conv, 24) // conversations going on at once
		reused, turns := 0, 0
		for n := range su.requests {
			i := r.IntN(len(cs))
			if n < len(cs) {
				i = n
			}
			c := cs[i]
			if c == nil || r.IntN(3) == 0 { // a new conversation in this place
				convs++
				c = &conv{think: r.IntN(3) == 0, plain: r.IntN(5) == 0}
				if r.IntN(3) > 0 {
					c.msgs = append(c.msgs, map[string]any{"role": "system", "content": systems[r.IntN(len(systems))]})
				}
				cs[i] = c
			}
			var prompt []int
			if c.plain {
				c.text = append(c.text, tok.Encode(" "+phrase(3, 40))...)
				prompt = c.text
			} else {
				c.msgs = append(c.msgs, map[string]any{"role": "user", "content": phrase(2, 25)})
				raw, _ := json.Marshal(c.msgs)
				var err error
				if prompt, err = (Chat{Messages: raw, Think: c.think}).Prompt(tok); err != nil {
					t.Fatal(err)
				}
			}
			req := Request{Prompt: prompt, MaxTokens: 1 + r.IntN(16), LoopGuard: -1}
			if r.IntN(2) == 0 {
				req.Sample = sample.Options{Temperature: 0.8, TopP: 0.95, TopK: 20, Seed: r.Uint64()}
			}
			e := cached[r.IntN(2)]
			a, la := stepLogits(t, e, req)
			b, lb := stepLogits(t, cold, req)
			if !slices.Equal(a.Tokens, b.Tokens) || !logitsEqual(la, lb) || a.Text != b.Text {
				t.Fatalf("%v chunk %d, request %d (%d prompt tokens, %d cached): cached reply %q, uncached %q; logits equal %v",
					su.act, chunk, n, len(prompt), a.Metrics.CachedTokens, a.Text, b.Text, logitsEqual(la, lb))
			}
			if b.Metrics.CachedTokens != 0 {
				t.Fatalf("the engine without reuse reused %d tokens", b.Metrics.CachedTokens)
			}
			if su.draft && !sameLaneState(&e.draft.lane, &cold.draft.lane) {
				t.Fatalf("request %d: the drafter's state differs with the cache and without", n)
			}
			reused += a.Metrics.CachedTokens
			turns++
			if c.plain {
				c.text = append(c.text, a.Tokens...)
			} else {
				c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": a.Text})
			}
		}
		st := cache.Stats()
		if reused == 0 || st.Hits == 0 || st.Evictions == 0 || st.Bytes > cache.Budget() {
			t.Fatalf("%v chunk %d: %d tokens reused; cache %+v, budget %d", su.act, chunk, reused, st, cache.Budget())
		}
		if drafts := cache.draftEntries(); su.draft != (drafts > 0) {
			t.Fatalf("drafting %v: %d of the drafter's snapshots in the cache", su.draft, drafts)
		}
		t.Logf("%v chunk %d: %d requests equal, %d prompt tokens reused; cache %+v", su.act, chunk, turns, reused, st)
	}
	t.Logf("%d conversations", convs)
}

// TestCacheBudget: the cache keeps the most recently used snapshots within
// its budget, never one larger than the budget, and a lookup is exact.
func TestCacheBudget(t *testing.T) {
	m, _ := tiny(t)
	s := m.NewState()
	var snaps []*model.Snapshot
	var keys [][]int
	for i := range 4 {
		ids := []int{1, 2, 3, 4, 5, 6, 7, 8}[:i+3]
		s.Reset()
		m.Forward(s, ids)
		snaps = append(snaps, s.Snapshot())
		keys = append(keys, ids)
	}
	c := NewCache(snaps[2].Bytes() + snaps[3].Bytes())
	for i := range 3 {
		c.put(false, keys[i], snaps[i])
	}
	if !c.has(false, keys[1]) || !c.has(false, keys[2]) || c.has(false, keys[0]) {
		t.Fatalf("after three puts: %+v", c.Stats())
	}
	c.has(false, keys[1])           // 1 is now the most recent
	c.put(false, keys[3], snaps[3]) // evicts 2, the least recent, to fit
	if c.has(false, keys[2]) || !c.has(false, keys[1]) || !c.has(false, keys[3]) {
		t.Fatalf("after the fourth put: %+v", c.Stats())
	}
	if c.get(false, []int{1, 2, 3, 4, 5}) != nil || c.get(false, []int{1, 2, 3, 4, 5, 6, 7}) != nil {
		t.Fatal("a lookup matched a prefix of another length")
	}
	if st := c.Stats(); st.Bytes > c.Budget() || st.Entries != 2 {
		t.Fatalf("stats %+v, budget %d", st, c.Budget())
	}
	small := NewCache(snaps[0].Bytes() - 1)
	small.put(false, keys[0], snaps[0])
	if small.Stats().Entries != 0 {
		t.Fatal("a snapshot larger than the budget was kept")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a snapshot stored under a prefix of another length did not panic")
		}
	}()
	c.put(false, keys[0], snaps[1])
}

// TestContinue: with Options.Continue the next turn goes on from the live
// State (the reply's tokens are not prefilled again), and its logits equal
// a cold prefill's within float32 rounding: the reply was fed by decode
// steps where the cold run prefills it in one piece (2e-3, the model
// tests' logit tolerance on logits of O(10)).
func TestContinue(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, tok, Options{Continue: true, Cache: NewCache(1 << 30)})
	if e.opts.Cache != nil {
		t.Fatal("an engine that continues kept its Cache")
	}
	p1, err := Chat{Messages: []byte(`[{"role":"user","content":"Write a haiku about rain."}]`)}.Prompt(tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: p1, MaxTokens: 12}, nil); err != nil {
		t.Fatal(err)
	}
	p2 := append(slices.Clone(e.Fed()), mustPrompt(t, tok, "<|im_end|>\n<|im_start|>user\nAgain.<|im_end|>\n<|im_start|>assistant\n")...)
	fed := len(e.Fed())
	r2, got := stepLogits(t, e, Request{Prompt: p2, MaxTokens: 4})
	_, want := stepLogits(t, New(m, tok, Options{NoReuse: true}), Request{Prompt: p2, MaxTokens: 4})
	if r2.Metrics.CachedTokens != fed {
		t.Fatalf("cached %d, want the %d tokens the State had consumed", r2.Metrics.CachedTokens, fed)
	}
	for i := range got[0] {
		if d := got[0][i] - want[0][i]; d > 2e-3 || d < -2e-3 {
			t.Fatalf("logit %d: %g continued, %g cold", i, got[0][i], want[0][i])
		}
	}
}

// draftEntries counts the drafter's snapshots in c.
func (c *Cache) draftEntries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.entries {
		if k.draft {
			n++
		}
	}
	return n
}

// sameLaneState reports whether two lanes' States are equal bit for bit:
// position, every DeltaNet layer's conv and recurrent state, every
// attention layer's keys and values.
func sameLaneState(a, b *lane) bool {
	if a.s.Pos() != b.s.Pos() || !slices.Equal(a.fed, b.fed) {
		return false
	}
	bits := func(x, y []float32) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	}
	for li, k := range a.m.Config().Layers {
		if k == model.DeltaNet {
			ca, ra := a.s.DeltaNetState(li)
			cb, rb := b.s.DeltaNetState(li)
			if !bits(ca, cb) || !bits(ra, rb) {
				return false
			}
			continue
		}
		for _, keys := range []bool{true, false} {
			if !bits(a.s.KVCacheHeads(li, keys), b.s.KVCacheHeads(li, keys)) {
				return false
			}
		}
	}
	return true
}
