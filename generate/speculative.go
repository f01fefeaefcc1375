package generate

import (
	"context"
	"fmt"
	"time"

	"forge/sample"
)

// Speculative decoding (Options.Draft). A round starts from the anchor,
// the reply's last token, which the target has not consumed yet:
//
//  1. the drafter proposes k tokens d_0…d_{k−1}, each drawn from its
//     distribution q_i after the anchor and the drafts before it;
//  2. the target runs the anchor and the drafts as one verify block
//     (model.Verify), whose row i is p_i, the target's logits after the
//     anchor and d_0…d_{i−1} — bit for bit a decode step's;
//  3. row by row, with the sampler's penalties counting the tokens kept so
//     far, draft i is decided by sample.Accept(p_i, q_i) (greedy: kept
//     when it is p_i's argmax); the first rejection returns a token drawn
//     from the residual, and when every draft is kept row k gives one
//     more token from p_k;
//  4. the target commits the rows of the anchor and the kept drafts, the
//     drafter likewise, and the round's last token is the next anchor.
//
// Every token is thus drawn from the distribution plain decoding would
// draw it from, with the same penalties and stops: greedy replies are
// plain decoding's token for token, sampled ones follow the same
// distribution (the draws differ, so a seed gives another reply than
// plain decoding's with that seed). The draft length adapts (adapt, in
// draft.go) and falls back to plain steps when drafting does not pay.

// decodeDraft is decode with the engine's drafter.
func (g *run) decodeDraft(ctx context.Context, logits []float32, room int) error {
	e, d := g.e, g.e.draft
	mt := &g.res.Metrics
	greedy, drafting := g.req.Sample.Temperature <= 0, g.drafting

	id, err := g.sample(logits)
	if err != nil {
		return err
	}
	if done, err := g.take(id, logits, room); done {
		return err
	}
	anchor, inject := id, g.thinkDue()
	d.pending = append(d.pending, anchor)
	for {
		if err := ctx.Err(); err != nil {
			return g.finish(FinishCancel, err)
		}
		if inject { // as decode does after a token that reaches the thinking budget
			n := len(e.fed)
			if logits, err = g.injectThinkClose(ctx, anchor, room); logits == nil {
				return err
			}
			d.pending = append(d.pending, e.fed[n+1:]...) // the phrase (the anchor is pending already)
			if anchor, inject, err = g.plainToken(logits, room); anchor < 0 {
				return err
			}
			d.pending = append(d.pending, anchor)
			continue
		}
		k := 0
		if drafting {
			k = d.adapt.next(len(g.res.Tokens))
		}
		// The block must fit the context and may not make more tokens than room.
		k = min(k, room-len(g.res.Tokens)-1)
		if c := e.m.Config().MaxContext; c > 0 {
			k = min(k, c-e.s.Pos()-1)
		}
		if k <= 0 {
			t0 := time.Now()
			g.one[0] = anchor
			lg := e.m.Forward(e.s, g.one[:])
			mt.TargetCalls++
			e.fed = append(e.fed, anchor)
			if drafting {
				d.adapt.plainStep(time.Since(t0))
			}
			mt.VerifySeconds += time.Since(t0).Seconds()
			if anchor, inject, err = g.plainToken(lg.Row(0), room); anchor < 0 {
				return err
			}
			d.pending = append(d.pending, anchor)
			continue
		}

		t0 := time.Now()
		if err := d.propose(ctx, k); err != nil {
			if ctx.Err() != nil {
				return g.finish(FinishCancel, err)
			}
			mt.DraftFailed = err.Error()
			drafting = false
			d.s.Commit(0)
			continue
		}
		t1 := time.Now()
		g.block = append(append(g.block[:0], anchor), d.drafts...)
		block := g.block
		lg, err := e.m.Verify(e.s, block)
		if err != nil {
			return g.finish(FinishError, err)
		}
		mt.TargetCalls++
		t2 := time.Now()

		// Decide the drafts row by row.
		used, kept, next, done := 0, 0, -1, false
		var derr error
		for i := 0; i <= k && !done; i++ {
			row := lg.Row(i)
			used = i + 1
			if g.req.Logits != nil {
				g.req.Logits(row)
			}
			var tok int
			accepted := false
			switch {
			case i == k:
				tok = g.sampler.Sample(row)
			case greedy:
				tok = sample.Argmax(row)
				accepted = tok == d.drafts[i]
			default:
				ids, probs := g.sampler.Dist(row)
				tok, accepted, _ = sample.Accept(sample.Dist{IDs: ids, Probs: probs}, d.qs[i], d.drafts[i], g.sampler)
			}
			if tok < 0 {
				done, derr = true, g.finish(FinishError, fmt.Errorf("the logits after %d generated tokens are all NaN or -Inf", len(g.res.Tokens)))
				break
			}
			if accepted {
				kept++
			}
			if done, derr = g.take(tok, row, room); done {
				break
			}
			next = tok
			if inject = g.thinkDue(); inject || !accepted {
				break
			}
		}
		e.s.Commit(used)
		e.fed = append(e.fed, block[:used]...)
		if done {
			next = -1
		}
		d.settle(used, next)
		t3 := time.Now()
		mt.AcceptHist[kept]++
		mt.Drafted += k
		mt.Kept += kept
		mt.DraftSeconds += t1.Sub(t0).Seconds()
		mt.VerifySeconds += t2.Sub(t1).Seconds()
		mt.SampleSeconds += t3.Sub(t2).Seconds()
		d.adapt.round(k, kept, t1.Sub(t0), t2.Sub(t1))
		if done {
			return derr
		}
		anchor = next
	}
}

// startDraft readies the drafter for the reply (Engine.prefill has fed
// it the prompt, or recorded why it could not).
func (g *run) startDraft() {
	e, d := g.e, g.e.draft
	g.res.Metrics.AcceptHist = make([]int, e.opts.DraftK+1)
	d.start(g.req.Sample, e.breakers, e.m.Config().Vocab)
	g.drafting = g.res.Metrics.DraftFailed == ""
}

// plainToken samples the token after logits as plain decoding does and
// takes it, and reports whether it reached the thinking budget; it
// returns −1 when the reply ended (with the error that ended it, if any).
func (g *run) plainToken(logits []float32, room int) (int, bool, error) {
	t0 := time.Now()
	defer func() { g.res.Metrics.SampleSeconds += time.Since(t0).Seconds() }()
	id, err := g.sample(logits)
	if err != nil {
		return -1, false, err
	}
	if done, err := g.take(id, logits, room); done {
		return -1, false, err
	}
	return id, g.thinkDue(), nil
}
