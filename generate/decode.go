package generate

import (
	"context"
	"fmt"

	"forge/sample"
	"forge/tokenizer"
)

// run is one reply in progress.
type run struct {
	e            *Engine
	req          Request
	emit         func(string) error
	res          Result
	stops        map[int]bool
	text         stopper
	stream       *tokenizer.Stream
	sampler      *sample.Sampler
	nextCheck    int    // reply length at which the loop guard looks next
	thinkChecked bool   // the thinking budget was reached
	one          [1]int // the token a decode step feeds
	block        []int  // a verify block's tokens (speculative.go)
	drafting     bool   // the drafter drafts (it has not failed)
}

func (e *Engine) newRun(req Request, emit func(string) error) *run {
	return &run{
		e: e, req: req, emit: emit, res: Result{StopToken: -1},
		stops:     e.stopSet(req.StopTokens),
		text:      newStopper(req.Stop),
		stream:    e.tok.NewStream(),
		sampler:   sample.New(req.Sample, e.breakers, e.m.Config().Vocab),
		nextCheck: LoopFirstCheck,
	}
}

// decode samples from logits, the last prompt token's, until the reply
// ends; room is the most tokens it may generate.
func (g *run) decode(ctx context.Context, logits []float32, room int) error {
	e := g.e
	bt := e.opts.Batcher
	if bt.On() {
		bt.join()
		defer bt.leave()
	}
	for {
		if err := ctx.Err(); err != nil {
			return g.finish(FinishCancel, err)
		}
		id, err := g.sample(logits)
		if err != nil {
			return err
		}
		if done, err := g.take(id, logits, room); done {
			return err
		}
		if g.thinkDue() {
			if logits, err = g.injectThinkClose(ctx, id, room); logits == nil {
				return err
			}
			continue
		}
		if bt.On() {
			e.step.tok = id
			if err := bt.step(&e.step); err != nil {
				return g.finish(FinishError, err)
			}
			logits = e.step.logits
		} else {
			g.one[0] = id
			logits = e.m.Forward(e.s, g.one[:]).Row(0)
		}
		g.res.Metrics.TargetCalls++
		e.fed = append(e.fed, id)
	}
}

// sample draws the next token from logits (after the Logits hook); logits
// that are all NaN or −Inf end the reply with an error.
func (g *run) sample(logits []float32) (int, error) {
	if g.req.Logits != nil {
		g.req.Logits(logits)
	}
	id := g.sampler.Sample(logits)
	if id < 0 {
		return -1, g.finish(FinishError, fmt.Errorf("the logits after %d generated tokens are all NaN or -Inf", len(g.res.Tokens)))
	}
	return id, nil
}

// take adds token id, sampled from logits, to the reply: a stop token
// ends it, any other is pushed (its logprob recorded), and the reply ends
// when it reaches room tokens. done reports that the reply has ended,
// with the error that ended it, if any.
func (g *run) take(id int, logits []float32, room int) (done bool, err error) {
	if g.req.Logprobs && !g.stops[id] {
		lp := logprobOf(logits, id, g.req.TopLogprobs)
		g.res.Logprobs = append(g.res.Logprobs, lp)
		if g.req.OnLogprob != nil {
			g.req.OnLogprob(lp)
		}
	}
	if g.stops[id] {
		g.res.StopToken = id
		return true, g.finish(FinishStop, nil)
	}
	if done, err := g.push(id); done || err != nil {
		return true, err
	}
	if len(g.res.Tokens) >= room {
		return true, g.full(room)
	}
	return false, nil
}

// full ends the reply at its limit of room tokens: MaxTokens, or the
// context when that is the smaller (Metrics.ContextFull).
func (g *run) full(room int) error {
	g.res.Metrics.ContextFull = room < g.req.MaxTokens || g.req.MaxTokens == 0 && g.e.m.Config().MaxContext > 0
	return g.finish(FinishLength, nil)
}

// thinkDue reports that the reply has just reached the thinking budget
// with its thinking still open; it is true at most once per reply.
func (g *run) thinkDue() bool {
	if g.req.ThinkBudget <= 0 || g.thinkChecked || len(g.res.Tokens) < g.req.ThinkBudget {
		return false
	}
	g.thinkChecked = true
	return thinkOpen(g.text.all())
}

// push appends a generated (or injected) token to the reply: the sampler's
// history, the text (stop strings) and the loop guard. done reports that
// the reply has ended.
func (g *run) push(id int) (done bool, err error) {
	g.res.Tokens = append(g.res.Tokens, id)
	g.sampler.Accept(id)
	if d := g.e.draft; d != nil && d.sampler != nil {
		d.sampler.Accept(id) // the drafter's penalties count the reply too
	}
	out, hit := g.text.add(g.stream.Add(id))
	if err := g.send(out); err != nil {
		return true, g.finish(FinishCancel, err)
	}
	if hit {
		return true, g.finish(FinishStop, nil)
	}
	if reps := g.loopReps(); reps > 0 && len(g.res.Tokens) >= g.nextCheck {
		g.nextCheck = len(g.res.Tokens) + LoopEvery
		if p := LoopPeriod(g.res.Tokens, reps, LoopMinPeriod, LoopMaxPeriod); p > 0 {
			g.res.Metrics.LoopPeriod = p
			return true, g.finish(FinishLoop, nil)
		}
	}
	return false, nil
}

func (g *run) loopReps() int {
	switch {
	case g.req.LoopGuard < 0:
		return 0
	case g.req.LoopGuard == 0:
		return LoopReps
	}
	return g.req.LoopGuard
}

// injectThinkClose feeds the last token and ThinkClose, and pushes the
// phrase into the reply (§4.4). It returns the logits after the phrase,
// or nil when the reply ended (with the error that ended it, if any).
func (g *run) injectThinkClose(ctx context.Context, last int, room int) ([]float32, error) {
	e := g.e
	phrase := e.tok.Encode(ThinkClose)
	if len(g.res.Tokens)+len(phrase) > room {
		return nil, g.full(room) // no room for the phrase: the reply ends here
	}
	g.res.Metrics.ThinkInjected = true
	feed := append([]int{last}, phrase...)
	logits, err := e.m.PrefillLast(ctx, e.s, feed, e.opts.Chunk)
	if err != nil {
		e.Reset()
		return nil, g.finish(FinishCancel, err)
	}
	e.fed = append(e.fed, feed...)
	g.res.Metrics.TargetCalls++
	for _, id := range phrase {
		if done, err := g.push(id); done || err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// send hands released text to the callback.
func (g *run) send(text string) error {
	if text == "" || g.emit == nil {
		return nil
	}
	return g.emit(text)
}

// finish ends the reply: the text held back is released (unless a stop
// string matched) and the result's text set.
func (g *run) finish(f Finish, err error) error {
	g.res.Finish = f
	if !g.text.hit {
		out, hit := g.text.add(g.stream.Flush())
		if hit {
			g.res.Finish = FinishStop
		}
		out += g.text.release()
		if err == nil {
			err = g.send(out)
		}
	}
	g.res.Text = g.text.all()
	return err
}
