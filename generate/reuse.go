package generate

import (
	"context"
	"fmt"
	"slices"

	"forge/model"
)

// A prompt is prefilled in segments, each in chunks of Options.Chunk rows
// counted from the segment's start. A segment starts at position 0 and at
// every turn-start token (<|im_start|>) that ends a user turn (tool
// results are user turns in Qwen's template) or comes at least MinSegment
// tokens after the start of the segment before: a cut before every
// assistant header, and short system or assistant turns run together with
// the turn after them (each piece of a prefill reads every weight once).
// Whether a position starts a segment depends only on the tokens before
// it, so the plan of a prompt's prefix is the plan of the prompt up to
// there. The cut points of a prompt are where a piece of its plan begins:
// segment starts and chunk boundaries. A prefill that resumes at a cut
// point from a State snapshot taken at the same point of an identical
// prefix runs exactly the pieces a prefill from the empty State runs from
// there on, so a cached reply is the uncached one bit for bit (the model's
// forward is deterministic for a given piece; TestCacheExact checks the
// logits of every step).
//
// Reused tokens are prompt tokens only: a reply's own tokens were fed one
// decode step at a time, which rounds differently from a prefill of the
// same tokens, so the live State after a reply is never continued.

// MinSegment is the shortest segment that a turn start ends when the turn
// before it is not a user turn.
const MinSegment = 64

// plan is a prompt's prefill plan.
type plan struct {
	prompt []int
	segs   []int // segment starts in (0, len(prompt)), ascending
	chunk  int
}

func (e *Engine) plan(prompt []int) plan {
	p := plan{prompt: prompt, chunk: e.opts.Chunk}
	if e.turnID < 0 {
		return p
	}
	last, user := 0, false // the segment's start; whether the current turn is a user's
	for i := 0; i < len(prompt); i++ {
		if prompt[i] != e.turnID {
			continue
		}
		if i > 0 && (user || i-last >= MinSegment) {
			p.segs = append(p.segs, i)
			last = i
		}
		user = i+1 < len(prompt) && prompt[i+1] == e.userID
	}
	return p
}

// segStart returns the start of the segment that holds position c.
func (p plan) segStart(c int) int {
	i, _ := slices.BinarySearch(p.segs, c+1) // segs[i-1] ≤ c
	if i == 0 {
		return 0
	}
	return p.segs[i-1]
}

// isCut reports whether c is a cut point strictly inside the prompt.
func (p plan) isCut(c int) bool {
	return c > 0 && c < len(p.prompt) && (c-p.segStart(c))%p.chunk == 0
}

// cuts returns the cut points in (lo, len(prompt)), longest first.
func (p plan) cuts(lo int) []int {
	var out []int
	for c := len(p.prompt) - 1; c > lo; {
		s := p.segStart(c)
		c = s + (c-s)/p.chunk*p.chunk // the segment's last chunk boundary ≤ c
		if c <= lo || c == 0 {
			break
		}
		out = append(out, c)
		c--
	}
	return out
}

// stores returns where the State is kept, ascending: the start of the
// first user turn when it is a cut point (the end of a system prompt that
// many conversations share) and the last cut point (the conversation so
// far, before the assistant's header).
func (p plan) stores(turnID, userID int) []int {
	cs := p.cuts(0)
	if len(cs) == 0 {
		return nil
	}
	last := cs[0]
	for i := 0; i+1 < last; i++ {
		if p.prompt[i] == turnID && p.prompt[i+1] == userID {
			if _, ok := slices.BinarySearch(p.segs, i); ok {
				return []int{i, last}
			}
			break
		}
	}
	return []int{last}
}

// lane is a model and the State an Engine prefills and decodes with: the
// target's, and with speculative decoding the drafter's, which is
// prefilled by the same plan, resumed from the same kind of snapshots (its
// own turn mark, its own entries in the shared Cache) and so, like the
// target's, is the same whether its prompt came from a cache or not.
type lane struct {
	m        *model.Model
	s        *model.State
	fed      []int // the tokens s has consumed
	turn     []int // the prompt prefix the turn snapshot holds (nil: none)
	turnMark model.Mark
	draft    bool // the drafter's lane (its Cache entries are apart)
}

// reset empties the lane's State and forgets its turn snapshot.
func (l *lane) reset() {
	l.s.Reset()
	l.fed = l.fed[:0]
	l.turn = nil
}

// Reusable returns how many of prompt's tokens the engine's own turn
// snapshot would spare a prefill (0 when it is not a cut point of the
// prompt's plan that the prompt extends).
func (e *Engine) Reusable(prompt []int) int { return e.lane.reusable(&e.opts, e.plan(prompt)) }

func (l *lane) reusable(o *Options, p plan) int {
	if o.NoReuse || l.turn == nil || !p.isCut(len(l.turn)) || !slices.Equal(l.turn, p.prompt[:len(l.turn)]) {
		return 0
	}
	return len(l.turn)
}

// prefill brings the State to the end of prompt, reusing what it can, and
// returns the last prompt token's logits. The drafter, if any, is
// prefilled after the target the same way; a drafter that fails here
// leaves the reply to plain decoding (Metrics.DraftFailed).
func (e *Engine) prefill(ctx context.Context, prompt []int, mt *Metrics) ([]float32, error) {
	mt.PromptTokens = len(prompt)
	p := e.plan(prompt)
	logits, err := e.lane.prefill(ctx, e, p)
	if err != nil {
		return nil, err
	}
	mt.CachedTokens = e.cached
	mt.PrefillTokens = len(prompt) - mt.CachedTokens
	if d := e.draft; d != nil {
		if _, err := d.lane.prefill(ctx, e, p); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			d.lane.reset()
			mt.DraftFailed = err.Error()
		}
	}
	return logits, nil
}

// prefill runs p on the lane: resume, then the pieces up to each store
// point (keeping the State there), then the rest.
func (l *lane) prefill(ctx context.Context, e *Engine, p plan) ([]float32, error) {
	if err := l.resume(&e.opts, p); err != nil {
		return nil, err
	}
	if !l.draft {
		e.cached = len(l.fed)
	}
	for _, c := range p.stores(e.turnID, e.userID) {
		if c <= len(l.fed) {
			continue
		}
		if _, err := l.run(ctx, p, c); err != nil {
			return nil, err
		}
		l.keep(&e.opts, p, c, e.turnID, e.userID)
	}
	return l.run(ctx, p, len(p.prompt))
}

// resume puts the State at the longest cut point of p whose prefix the
// turn snapshot or the shared cache holds, or at the empty State.
func (l *lane) resume(o *Options, p plan) error {
	if o.NoReuse {
		l.reset()
		return nil
	}
	if n := len(l.fed); o.Continue && n > len(l.turn) && n < len(p.prompt) && slices.Equal(l.fed, p.prompt[:n]) {
		return nil // the live State, as it is (Options.Continue)
	}
	at := l.reusable(o, p)
	if c := o.Cache; c != nil {
		cuts := p.cuts(at)
		slices.Reverse(cuts)
		cut, sn := c.longest(l.draft, p.prompt, cuts)
		if !l.draft {
			c.count(sn != nil)
		}
		if sn != nil {
			if err := l.restore(p, cut, sn.Pos()); err != nil {
				return err
			}
			if err := l.s.Restore(sn); err != nil {
				l.reset()
				return err
			}
			l.turn = nil // Restore released the turn snapshot's mark
			l.fed = append(l.fed[:0], p.prompt[:cut]...)
			return nil
		}
	}
	if at == 0 {
		l.reset()
		return nil
	}
	if err := l.restore(p, at, l.turnMark.Pos()); err != nil {
		return err
	}
	l.s.Rewind(l.turnMark)
	l.fed = append(l.fed[:0], l.turn...)
	return nil
}

// restore checks that a snapshot of pos tokens may seed p's prefill at
// cut: anything else would continue a State that is not the prompt's.
func (l *lane) restore(p plan, cut, pos int) error {
	if pos != cut || !p.isCut(cut) {
		l.reset()
		return fmt.Errorf("generate: internal error: a snapshot of %d tokens offered at position %d of a %d-token prompt", pos, cut, len(p.prompt))
	}
	return nil
}

// run prefills p's prompt from the State's position to end, one plan piece
// at a time, and returns the logits of its last token. (A State continued
// by Options.Continue may start between cut points: its first piece then
// ends at the next segment start.)
func (l *lane) run(ctx context.Context, p plan, end int) ([]float32, error) {
	var logits []float32
	for pos := len(l.fed); pos < end; {
		next := end
		if i, _ := slices.BinarySearch(p.segs, pos+1); i < len(p.segs) && p.segs[i] < end {
			next = p.segs[i]
		}
		// Chunks count from the segment's start; pos is a cut point (or
		// 0), so model.PrefillLast's chunks from pos keep that grid.
		var err error
		if logits, err = l.m.PrefillLast(ctx, l.s, p.prompt[pos:next], p.chunk); err != nil {
			l.reset() // a cancelled or failed prefill leaves the State unusable
			return nil, err
		}
		l.fed = append(l.fed, p.prompt[pos:next]...)
		pos = next
	}
	return logits, nil
}

// keep stores the State, now at cut c of p, as the turn snapshot (the
// last store point) and in the shared cache.
func (l *lane) keep(o *Options, p plan, c, turnID, userID int) {
	if o.NoReuse {
		return
	}
	stores := p.stores(turnID, userID)
	if c == stores[len(stores)-1] && !slices.Equal(l.turn, l.fed) {
		if l.turn != nil {
			l.s.Forget(l.turnMark)
		}
		l.turnMark = l.s.Mark()
		l.turn = slices.Clone(l.fed)
	}
	if cache := o.Cache; cache != nil && !cache.has(l.draft, l.fed) {
		cache.put(l.draft, l.fed, l.s.Snapshot())
	}
}
