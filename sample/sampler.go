package sample

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// pcgStream is the second PCG seed word; Options.Seed is the first.
const pcgStream = 0x9e3779b97f4a7c15

// Sampler is one reply's sampler: its options, the seeded generator, the set of tokens seen in
// the reply, the reply's recent tokens for DRY, and scratch buffers sized to the vocabulary, so
// that Dist, Sample and Accept allocate nothing (with a DRY window over 32768 tokens, nothing once
// the history buffer has grown to 2·Window).
// Not safe for concurrent use; one Sampler per reply (Reset to reuse it).
type Sampler struct {
	o     Options
	dry   DRY                         // o.DRY with defaults filled in
	dryOn bool                        // Multiplier > 0 and sampling (DRY is ignored when greedy)
	pen   [dryMaxExponent + 1]float64 // pen[e] = Multiplier·Base^e
	b     *Breakers
	vocab int

	pcg *rand.PCG
	rng *rand.Rand

	seen  bitset
	nseen int     // members of seen
	n     int     // tokens accepted in this reply
	hist  []int32 // the reply's last Window…2·Window tokens (DRY only)
	table dryTable

	c       []cand // candidates, len vocab when sampling
	scratch []cand // the nucleus search's copy (top-p with top-k off)
	ids     []int32
	probs   []float64
}

// New returns the sampler of one reply over a vocabulary of vocab ids; b may be nil (no DRY
// sequence breakers). It panics if o does not Validate: check user input with Validate first.
func New(o Options, b *Breakers, vocab int) *Sampler {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	if vocab <= 0 {
		panic(fmt.Sprintf("sample: vocabulary of %d ids", vocab))
	}
	s := &Sampler{o: o, dry: o.DRY.resolved(), b: b, vocab: vocab}
	s.pcg = rand.NewPCG(o.Seed, pcgStream)
	s.rng = rand.New(s.pcg)
	s.seen = make(bitset, (vocab+63)/64)
	if o.Temperature <= 0 {
		s.ids, s.probs = make([]int32, 1), make([]float64, 1)
		return s
	}
	s.c = make([]cand, vocab)
	s.ids, s.probs = make([]int32, vocab), make([]float64, vocab)
	if o.TopP > 0 && o.TopP < 1 && (o.TopK == 0 || o.TopK >= vocab) {
		s.scratch = make([]cand, vocab)
	}
	if s.dryOn = o.DRY.Multiplier > 0; s.dryOn {
		for e := range s.pen {
			s.pen[e] = s.dry.Multiplier * math.Pow(s.dry.Base, float64(e))
		}
		s.table.len = make([]int32, vocab)
		s.table.ids = make([]int32, 0, min(s.dry.Window, vocab))
		s.hist = make([]int32, 0, min(2*s.dry.Window, 1<<16))
	}
	return s
}

// Dist returns the candidate ids and their probabilities after the whole chain (see the package
// doc); greedy: the argmax with probability 1. Every probability is > 0 and they sum to 1 up to
// rounding. The ids are in descending probability order (ties: smaller id first) when
// 0 < TopK < V, otherwise in increasing id order. Both slices are owned by s and valid until its
// next call. They are empty only when no logit is a number (all NaN, or −Inf when sampling).
// It panics if len(logits) is not the vocabulary size.
func (s *Sampler) Dist(logits []float32) ([]int32, []float64) {
	s.check(logits)
	if s.o.Temperature <= 0 {
		a := Argmax(logits)
		if a < 0 {
			return s.ids[:0], s.probs[:0]
		}
		s.ids[0], s.probs[0] = int32(a), 1
		return s.ids[:1], s.probs[:1]
	}
	c, byID := s.gather(logits)
	s.penalize(c, byID)
	sorted := !byID
	if sorted {
		slices.SortFunc(c, cmpDesc)
	}
	c = softmax(c, s.o.Temperature)
	if p := s.o.TopP; p > 0 && p < 1 {
		if sorted {
			c = cutSorted(c, p)
		} else {
			c = topPUnsorted(c, s.scratch, p)
		}
		normalize(c)
	}
	if s.o.MinP > 0 {
		c = minP(c, s.o.MinP)
		normalize(c)
	}
	for i, e := range c {
		s.ids[i], s.probs[i] = e.id, e.v
	}
	return s.ids[:len(c)], s.probs[:len(c)]
}

// Sample returns a token drawn from Dist(logits) with s's generator; greedy returns Argmax
// without a draw. −1 means no logit is a number (see Dist). It does not Accept the token.
func (s *Sampler) Sample(logits []float32) int {
	if s.o.Temperature <= 0 {
		s.check(logits)
		return Argmax(logits)
	}
	return s.Draw(s.Dist(logits))
}

// Draw returns ids[i] with probability probs[i] (probs summing to 1, as from Dist or a residual
// distribution derived from it), using one uniform from s's generator; −1 when ids is empty.
func (s *Sampler) Draw(ids []int32, probs []float64) int {
	u, last := s.rng.Float64(), -1
	for i, p := range probs {
		if u < p {
			return int(ids[i])
		}
		u -= p
		if p > 0 {
			last = i
		}
	}
	if last < 0 { // empty, or no positive probability
		return -1
	}
	return int(ids[last]) // u beyond the sum by rounding
}

// Float64 returns a uniform draw in [0, 1) from s's generator, for acceptance tests (speculative
// decoding) that must come from the reply's seeded stream.
func (s *Sampler) Float64() float64 { return s.rng.Float64() }

// Accept records a token emitted in this reply, sampled or forced: it is seen (presence) and
// joins the DRY history. It panics if id is outside the vocabulary.
func (s *Sampler) Accept(id int) {
	if id < 0 || id >= s.vocab {
		panic(fmt.Sprintf("sample: Accept(%d) outside a vocabulary of %d", id, s.vocab))
	}
	if s.seen.add(int32(id)) {
		s.nseen++
	}
	s.n++
	if !s.dryOn {
		return
	}
	if w := s.dry.Window; len(s.hist) >= 2*w { // keep the last w; amortized O(1), no allocation
		s.hist = s.hist[:copy(s.hist, s.hist[len(s.hist)-w:])]
	}
	s.hist = append(s.hist, int32(id))
}

// Reset starts a new reply: nothing seen, no history, the generator reseeded with Options.Seed.
func (s *Sampler) Reset() {
	if s.nseen > 0 {
		s.seen.clear()
	}
	s.nseen, s.n = 0, 0
	s.hist = s.hist[:0]
	s.pcg.Seed(s.o.Seed, pcgStream)
}

func (s *Sampler) check(logits []float32) {
	if len(logits) != s.vocab {
		panic(fmt.Sprintf("sample: %d logits for a vocabulary of %d", len(logits), s.vocab))
	}
}

// gather is step 1, top-k: the k = min(TopK, V) best logits in no particular order, or, with
// top-k off (or k = V), every logit in id order (byID: c[i].id == i). NaN logits become −Inf.
func (s *Sampler) gather(logits []float32) (c []cand, byID bool) {
	k := s.o.TopK
	if k > 0 && k < len(logits) && k <= heapMaxK {
		return topKHeap(s.c, logits, k), false
	}
	c = s.c[:len(logits)]
	for i, x := range logits {
		c[i] = cand{key(x), int32(i)}
	}
	if k > 0 && k < len(logits) {
		selectTop(c, k)
		return c[:k], false
	}
	return c, true
}

// penalize is steps 2 and 3: presence, then DRY, on the candidates' logits. byID says c is
// indexed by id (all of the vocabulary), so the sparse seen set and DRY table index it directly;
// otherwise each candidate is looked up.
func (s *Sampler) penalize(c []cand, byID bool) {
	if p := s.o.Presence; p != 0 && s.nseen > 0 {
		if byID {
			for w, word := range s.seen {
				for ; word != 0; word &= word - 1 {
					c[w<<6+bits.TrailingZeros64(word)].v -= p
				}
			}
		} else {
			for i := range c {
				if s.seen.has(c[i].id) {
					c[i].v -= p
				}
			}
		}
	}
	// The reference applies DRY when the reply is longer than Allowed; a match of length ≥ Allowed
	// needs that many tokens and one more anyway, so this only skips the matcher early.
	if !s.dryOn || s.n <= s.dry.Allowed {
		return
	}
	s.matches()
	allowed := int32(s.dry.Allowed)
	if byID {
		for _, id := range s.table.ids {
			if n := s.table.len[id]; n >= allowed {
				c[id].v -= s.pen[min(n-allowed, dryMaxExponent)]
			}
		}
		return
	}
	for i := range c {
		if n := s.table.len[c[i].id]; n >= allowed {
			c[i].v -= s.pen[min(n-allowed, dryMaxExponent)]
		}
	}
}

// matches runs the DRY matcher over the last Window tokens of the reply into s.table.
func (s *Sampler) matches() {
	dryMatches(&s.table, s.hist[max(0, len(s.hist)-s.dry.Window):], s.b, s.dry.MaxMatch)
}

// softmax is step 4: p_i = exp((v_i − max v)·(1/t)) / Σ, in place. Candidates whose probability is 0
// (−Inf logits, underflow) are dropped, keeping the order. If the largest value is +Inf, the +Inf
// candidates share the mass equally (the limit); if it is −Inf, nothing is left.
func softmax(c []cand, t float64) []cand {
	m := math.Inf(-1)
	for _, e := range c {
		m = max(m, e.v)
	}
	if math.IsInf(m, -1) {
		return c[:0]
	}
	inf, w, inv := math.IsInf(m, 1), 0, 1/t
	for _, e := range c {
		var p float64
		switch {
		case inf && e.v == m:
			p = 1
		case !inf:
			p = math.Exp((e.v - m) * inv)
		}
		if p > 0 {
			c[w] = cand{p, e.id}
			w++
		}
	}
	c = c[:w]
	normalize(c)
	return c
}

// normalize divides by the sum (as a multiplication by its inverse).
func normalize(c []cand) {
	var sum float64
	for _, e := range c {
		sum += e.v
	}
	inv := 1 / sum
	for i := range c {
		c[i].v *= inv
	}
}

// cutSorted is step 5 on candidates in descending order: the shortest prefix whose cumulative
// probability is ≥ p (all of c if rounding keeps the sum below p).
func cutSorted(c []cand, p float64) []cand {
	var cum float64
	for i, e := range c {
		if cum += e.v; cum >= p {
			return c[:i+1]
		}
	}
	return c
}

// topPUnsorted is step 5 on candidates in id order: nucleusCut on a copy finds the worst token
// kept, then one pass keeps the tokens at least as good, in id order. O(V) expected, no sort.
func topPUnsorted(c, scratch []cand, p float64) []cand {
	t := nucleusCut(scratch[:copy(scratch, c)], p)
	w := 0
	for _, e := range c {
		if !better(t, e) {
			c[w] = e
			w++
		}
	}
	return c[:w]
}

// minP is step 6: keep the candidates with probability ≥ m·max p (order kept).
func minP(c []cand, m float64) []cand {
	var pmax float64
	for _, e := range c {
		pmax = max(pmax, e.v)
	}
	thr, w := m*pmax, 0
	for _, e := range c {
		if e.v >= thr {
			c[w] = e
			w++
		}
	}
	return c[:w]
}
