package model

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"forge/tensor"
)

// Model is a loaded Qwen3.5 hybrid text model (docs/model.md §5). It is read-only
// after Load, so one Model serves any number of States concurrently.
type Model struct {
	cfg    Config
	embed  Rower
	layers []layer
	norm   []float32 // [H] final norm scale 1+w
	head   Linear    // lm_head [vocab, H]
	rope   rope
	timed  bool // decode steps choose between the pool and running alone (stepMode)
}

// Rower is a Linear whose rows can be read one at a time: the embedding
// table is looked up through it.
type Rower interface {
	Linear
	// Row widens row i of the weight into dst (len = in).
	Row(i int, dst []float32)
}

type layer struct {
	kind     LayerKind
	inNorm   []float32 // [H] 1+w
	postNorm []float32 // [H] 1+w
	gdn      *deltaNet
	attn     *attention
	gate, up Linear // [I, H]
	down     Linear // [H, I]
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// scratch holds the per-State activations of one Forward call, reused
// across calls so that a decode step allocates nothing.
type scratch struct {
	x, u, y     tensor.Matrix // [T, H] residual, normed input, sub-block output
	g, up       tensor.Matrix // [T, I] MLP gate and up
	logits      tensor.Matrix // [T, vocab]
	x0, xc, z   tensor.Matrix // DeltaNet: [T, convDim] raw (x0) and conv'd (xc) rows, [T, Hv·dv] gate z
	ga, gb      tensor.Matrix // [T, Hv] decay g and β
	o           tensor.Matrix // [T, Hv·dv] core output, then gated-norm output
	p, q, gate  tensor.Matrix // attention: [T, 2·Hq·D] q_proj, [T, Hq·D] queries, gates
	kp, vp, att tensor.Matrix // [T, Hkv·D] keys, values; [T, Hq·D] attention output
	obs         tensor.Matrix // observer copies
	w           []float32     // [Hv·dv] recurrent-step scratch
	wu          []float32     // [Hv·dv] a verify block's u (deltaRows)
	rw          []float32     // [3·Hv·dv] Commit's replay scratch: o, w, u a head (verify.go)
	scores      []float32     // [Hq][pos+32] decode attention scores
	cos, sin    []float32     // [T][R/2] RoPE tables
	heads       []*headScratch
	job         rowJob   // row-parallel dispatch (rows.go)
	step        stepJob  // head-parallel decode step (deltanet.go)
	stage       stage    // a decode step's products of one input (stage.go)
	attJob      attJob   // head-parallel decode attention (attention.go)
	conv        convJob  // row-parallel DeltaNet conv (deltanet.go)
	mode        stepMode // whether decode steps use the worker pool (stage.go)
	// rmode makes the same choice for calls of T rows computed as decode
	// steps (verify blocks, step batches), one chooser for each T.
	rmode [maxVerify + 1]stepMode
	// attBlock is a verify block's attention (attention.go); it comes
	// after the choosers: placed between the stage and them it slowed
	// forge-tiny's decode step ~5% (measured, BENCHMARKS.md issue 14).
	attBlock attBlockJob
	alone    bool      // the current call runs on the caller alone (its chooser's pick)
	replay   replayJob // Commit's head-parallel replay (verify.go)
}

// headScratch is one value head's chunk buffers for prefill.
type headScratch struct {
	q, k    []float32 // [C][dk]
	v, o    []float32 // [C][dv]
	g, beta []float32 // [C]
	cs      *chunkScratch
}

func (sc *scratch) ensureChunk(c *Config, C int) {
	if len(sc.heads) == c.ValueHeads {
		return
	}
	sc.heads = make([]*headScratch, c.ValueHeads)
	for h := range sc.heads {
		sc.heads[h] = &headScratch{
			q: make([]float32, C*c.KeyDim), k: make([]float32, C*c.KeyDim),
			v: make([]float32, C*c.ValueDim), o: make([]float32, C*c.ValueDim),
			g: make([]float32, C), beta: make([]float32, C),
			cs: newChunkScratch(C, c.ValueDim),
		}
	}
}

// CheckIDs reports the first token id outside [0, vocab).
func (m *Model) CheckIDs(tokens []int) error {
	for i, t := range tokens {
		if t < 0 || t >= m.cfg.Vocab {
			return fmt.Errorf("token %d at index %d is outside the vocabulary [0, %d)", t, i, m.cfg.Vocab)
		}
	}
	return nil
}

// CheckTokens reports the first token id outside [0, vocab), and a
// sequence longer than the model's context (wrapping ErrContext).
func (m *Model) CheckTokens(tokens []int) error {
	if err := m.CheckIDs(tokens); err != nil {
		return err
	}
	if n := m.cfg.MaxContext; n > 0 && len(tokens) > n {
		return fmt.Errorf("a sequence of %d tokens is %w of %d tokens (max_position_embeddings)", len(tokens), ErrContext, n)
	}
	return nil
}

// Forward consumes tokens at positions s.Pos()… and returns their logits
// [T, vocab] (owned by s, valid until the next call). T = 1 runs the
// recurrent DeltaNet form, T > 1 the chunked one; both continue from s.
// Token ids must be in range and the State must not go past the context
// (CheckTokens; it panics otherwise); an empty call returns a 0-row matrix.
func (m *Model) Forward(s *State, tokens []int) *tensor.Matrix {
	lg, _ := m.forward(context.Background(), s, tokens, false)
	return lg
}

// forward is Forward, checking ctx before each layer. With last set the
// head runs on the last row alone and the logits are [1, vocab].
func (m *Model) forward(ctx context.Context, s *State, tokens []int, last bool) (*tensor.Matrix, error) {
	c := &m.cfg
	T := len(tokens)
	sc := &s.sc
	sc.logits.Resize(T, c.Vocab)
	if T == 0 {
		return &sc.logits, nil
	}
	if c.MaxContext > 0 && s.pos+s.pend+T > c.MaxContext {
		panic(fmt.Sprintf("model: %d tokens at position %d go past the context of %d (check with CheckTokens)", T, s.pos+s.pend, c.MaxContext))
	}
	m.begin(s, T)
	if md := m.chooser(s, T); md != nil {
		md.begin()
		sc.alone = md.alone
		defer md.end(time.Now())
	}
	m.Embed(&sc.x, tokens)
	s.storeRows(SiteHidden, -1, &sc.x)
	s.observe("embed", &sc.x)
	for li := range m.layers {
		if err := ctx.Err(); err != nil {
			s.broken = true
			return nil, err
		}
		m.layerForward(s, li)
	}
	s.doRows(opNorm, m.norm, c.Eps, T)
	s.storeRows(SiteNorm, -1, &sc.u)
	s.observe("final_norm", &sc.u)
	if last && T > 1 {
		u := tensor.FromSlice(1, c.Hidden, sc.u.Row(T-1))
		sc.logits.Resize(1, c.Vocab)
		s.products(u).add(m.head, &sc.logits).do()
	} else {
		s.products(&sc.u).add(m.head, &sc.logits).do()
	}
	if s.verify {
		s.pend += T
	} else {
		s.pos += T
	}
	return &sc.logits, nil
}

// chooser returns the stepMode that picks whether a call of T rows on s
// runs alone or with the pool, nil where nothing is chosen (a model of
// modeBytes or more, prefill): decode steps share one, and calls of T
// rows computed as decode steps (verify blocks, step batches) have one
// for each T, since their times, and which mode wins, depend on T (a
// forge-tiny verify block of one row, BENCHMARKS.md issue 14: 230 µs with
// the pool, 143 alone).
func (m *Model) chooser(s *State, T int) *stepMode {
	switch {
	case !m.timed || T > maxVerify:
		return nil
	case s.verify || s.rows != nil:
		md := &s.sc.rmode[T]
		if md.steps == 0 {
			s.sc.seed(md)
		}
		return md
	case T == 1:
		if s.sc.mode.steps == 0 {
			s.sc.seed(&s.sc.mode)
		}
		return &s.sc.mode
	}
	return nil
}

// seed starts md, one of sc's choosers, from the warmest of the others
// (stepMode.seed).
func (sc *scratch) seed(md *stepMode) {
	from := [maxVerify + 2]*stepMode{&sc.mode}
	for i := range sc.rmode {
		from[i+1] = &sc.rmode[i]
	}
	md.seed(from[:]...)
}

// begin readies s's scratch for a call of T rows at positions s.Pos()….
func (m *Model) begin(s *State, T int) {
	if s.cfg != &m.cfg {
		panic("model: State belongs to another Model")
	}
	if s.broken {
		panic("model: State used after a cancelled call without Reset or Rewind")
	}
	if !s.verify {
		s.settled("a forward")
	}
	c, sc := &m.cfg, &s.sc
	if len(sc.w) != c.ValueTotal() {
		sc.w = make([]float32, c.ValueTotal())
	}
	if s.verify && len(sc.wu) != c.ValueTotal() {
		sc.wu = make([]float32, c.ValueTotal())
	}
	at := s.pos + s.pend // the call's first position
	last := at
	if s.verify {
		last += T - 1 // a verify block's rows attend as decode steps (attendStep)
	}
	need := c.Heads * (last + 32) // per head pos+1 rounded up to whole vectors, and one more (attendStep)
	if s.verify {
		need = T * c.Heads * (last + 33) // every row's heads at once, each pair ws = pos+T+32 apart (attendBlock)
	}
	if len(sc.scores) < need {
		sc.scores = make([]float32, 2*need)
	}
	sc.alone = false
	sc.x.Resize(T, c.Hidden)
	m.rope.fill(sc, at, T)
	sc.u.Resize(T, c.Hidden)
	sc.y.Resize(T, c.Hidden)
}

// Embed writes the embedding rows of tokens to dst, shaped [T, H]. Token
// ids must be in range (CheckTokens); it panics otherwise.
func (m *Model) Embed(dst *tensor.Matrix, tokens []int) {
	c := &m.cfg
	dst.Resize(len(tokens), c.Hidden)
	for t, tok := range tokens {
		if tok < 0 || tok >= c.Vocab {
			panic(fmt.Sprintf("model: token %d outside [0, %d)", tok, c.Vocab))
		}
		m.embed.Row(tok, dst.Row(t))
	}
}

// ForwardLayer runs decoder layer li alone on the hidden rows x [T, H] (the
// residual stream entering the layer), replacing them with the layer's
// output, at positions s.Pos()…. It uses and updates only layer li's part
// of s and does not advance s.Pos(): running every layer in turn on the
// same State and then s.Advance(T) is Forward without the embedding and
// the head (bit for bit). This is
// how calibration runs a model layer by layer (docs/architecture.md §4.1: layers < ℓ
// already quantized).
func (m *Model) ForwardLayer(s *State, li int, x *tensor.Matrix) {
	if x.Cols != m.cfg.Hidden {
		panic(fmt.Sprintf("model: ForwardLayer: %d columns, want %d", x.Cols, m.cfg.Hidden))
	}
	if x.Rows == 0 {
		return
	}
	m.begin(s, x.Rows)
	sc := &s.sc
	copy(sc.x.Data, x.Data[:x.Rows*x.Cols])
	m.layerForward(s, li)
	copy(x.Data, sc.x.Data)
}

// Head returns the logits [T, vocab] of the hidden rows x [T, H], the
// residual stream leaving the last layer: the final norm, then the head,
// as Forward computes them (bit for bit). With ForwardLayer it runs a
// model from any layer on (a sweep re-runs only the layers from the one
// it changed). The logits are owned by s; s.Pos() does not move.
func (m *Model) Head(s *State, x *tensor.Matrix) *tensor.Matrix {
	c := &m.cfg
	if x.Cols != c.Hidden {
		panic(fmt.Sprintf("model: Head: %d columns, want %d", x.Cols, c.Hidden))
	}
	T := x.Rows
	sc := &s.sc
	sc.logits.Resize(T, c.Vocab)
	if T == 0 {
		return &sc.logits
	}
	m.begin(s, T)
	copy(sc.x.Data, x.Data[:T*c.Hidden])
	s.doRows(opNorm, m.norm, c.Eps, T)
	s.storeRows(SiteNorm, -1, &sc.u)
	s.products(&sc.u).add(m.head, &sc.logits).do()
	return &sc.logits
}

// layerForward is one pre-norm decoder layer (docs/model.md §5):
// x ← x + Mixer(norm_in(x)); x ← x + MLP(norm_post(x)).
func (m *Model) layerForward(s *State, li int) {
	c := &m.cfg
	sc := &s.sc
	L := &m.layers[li]
	T := sc.x.Rows
	s.doRows(opNorm, L.inNorm, c.Eps, T)
	s.storeRows(SiteNorm, li, &sc.u)
	if L.kind == Attention {
		L.attn.forward(m, s, li, &sc.u, &sc.y)
	} else {
		L.gdn.forward(m, s, li, &sc.u, &sc.y)
	}
	addTo(sc.x.Data, sc.y.Data)
	s.storeRows(SiteHidden, li, &sc.x)
	s.doRows(opNorm, L.postNorm, c.Eps, T)
	s.storeRows(SiteNorm, li, &sc.u)
	// SwiGLU MLP (docs/model.md §10): (silu(u·W_gateᵀ) ⊙ (u·W_upᵀ))·W_downᵀ.
	sc.g.Resize(T, c.Intermediate)
	sc.up.Resize(T, c.Intermediate)
	s.products(&sc.u).add(L.gate, &sc.g).add(L.up, &sc.up).do()
	if s.num != nil {
		s.swigluNum(li)
		s.downNum(L, li)
	} else {
		s.doRows(opSwiGLU, nil, 0, T)
		s.products(&sc.g).add(L.down, &sc.y).do()
	}
	s.observeLayer(li, "mlp_out", &sc.y)
	addTo(sc.x.Data, sc.y.Data)
	s.storeRows(SiteHidden, li, &sc.x)
	if s.Observe != nil {
		s.Observe("layer_out."+strconv.Itoa(li), &sc.x)
	}
}

// WeightBytes returns the bytes of weights one decode step reads: every
// Linear that reports its size (Bytes() int64) plus one embedding row. A
// tied head counts once per use.
func (m *Model) WeightBytes() int64 {
	size := func(l Linear) int64 {
		if b, ok := l.(interface{ Bytes() int64 }); ok {
			return b.Bytes()
		}
		return 0
	}
	n := size(m.head)
	if vocab, _ := m.embed.Dims(); vocab > 0 {
		n += size(m.embed) / int64(vocab)
	}
	for _, l := range m.products() {
		n += size(l)
	}
	return n
}

// products is every layer's Linear, in layer order (not the head).
func (m *Model) products() []Linear {
	var ls []Linear
	for _, L := range m.layers {
		ls = append(ls, L.gate, L.up, L.down)
		if L.attn != nil {
			ls = append(ls, L.attn.q, L.attn.k, L.attn.v, L.attn.o)
		} else {
			ls = append(ls, L.gdn.qkv, L.gdn.z, L.gdn.a, L.gdn.b, L.gdn.out)
		}
	}
	return ls
}
