package generate

import (
	"context"
	"fmt"
	"math"
	"time"

	"forge/model"
	"forge/sample"
	"forge/tokenizer"
)

// DefaultDraftK is the most tokens a drafter proposes per target call
// when Options.DraftK is 0 (the reference's default block of 8 rows).
const DefaultDraftK = 7

// MaxDraftK is the largest Options.DraftK.
const MaxDraftK = 16

// CheckDraft reports why draft cannot draft for target: another model
// vocabulary, or a tokenizer that gives some id another meaning
// (tokenizer.SameIDs names the first). The drafter reads the target's
// ids, so only the id space must agree, not how text is split.
func CheckDraft(target *model.Model, ttok *tokenizer.Tokenizer, draft *model.Model, dtok *tokenizer.Tokenizer) error {
	if tv, dv := target.Config().Vocab, draft.Config().Vocab; tv != dv {
		return fmt.Errorf("the drafter's model has %d vocabulary rows, the target's %d", dv, tv)
	}
	if err := ttok.SameIDs(dtok); err != nil {
		return fmt.Errorf("the drafter's tokenizer differs from the target's: %w", err)
	}
	return nil
}

// CheckDraftK refuses a draft length outside 1…MaxDraftK.
func CheckDraftK(k int) error {
	if k < 1 || k > MaxDraftK {
		return fmt.Errorf("draft length %d: want 1 to %d tokens", k, MaxDraftK)
	}
	return nil
}

// drafter is an Engine's draft model and its State (a lane, prefilled
// with the prompt as the target is). During a reply its State lags the
// target's by the tokens in pending (committed to the reply, not yet
// fed); a round feeds them and stacks its drafts as pending Verify rows,
// so that a rejection costs no copy of the drafter's state either.
type drafter struct {
	lane
	pending []int
	sampler *sample.Sampler // nil when greedy
	qs      []sample.Dist   // the distributions the round's drafts were drawn from
	drafts  []int
	lead    int // pending Verify rows of s this round before the anchor's (catchUp)
	rows    int // pending Verify rows of s this round from the anchor's on
	adapt   adapt
}

func newDrafter(m *model.Model, o Options) *drafter {
	d := &drafter{lane: lane{m: m, s: m.NewStateKV(o.KV), draft: true}}
	d.s.SetAct(o.Act)
	d.adapt.init(o.DraftK, o.DraftFixed)
	return d
}

// start readies the drafter for a reply: its State has consumed the
// prompt (Engine.prefill), its sampler starts afresh.
func (d *drafter) start(opts sample.Options, b *sample.Breakers, vocab int) {
	d.pending = d.pending[:0]
	d.sampler = nil
	if opts.Temperature > 0 {
		opts.Seed ^= draftSeed
		d.sampler = sample.New(opts, b, vocab)
	}
	d.adapt.reset()
}

// draftSeed sets the drafter's draws apart from the target's.
const draftSeed = 0x5bd1e9955bd1e995

// catchRows is the most pending tokens before the anchor that a round
// feeds the drafter in its first Verify call; more go in first, by
// prefill (catchUp).
const catchRows = 4

// propose drafts k tokens after the pending ones: it feeds them (a long
// run of them but the last as a prefill, catchUp; the rest as the first
// Verify rows, the anchor's last) and then each draft in turn as one more
// Verify row, drawing draft i from the drafter's distribution q_i
// (greedy: its argmax). An error (the drafter's context is full, its
// logits are not numbers) ends drafting for the reply.
func (d *drafter) propose(ctx context.Context, k int) error {
	if err := d.catchUp(ctx); err != nil {
		return err
	}
	d.drafts, d.rows, d.lead = d.drafts[:0], 0, len(d.pending)-1
	toks := d.pending
	for i := range k {
		lg, err := d.m.Verify(d.s, toks)
		if err != nil {
			return err
		}
		d.rows++
		row := lg.Row(lg.Rows - 1)
		var next int
		if d.sampler == nil {
			next = sample.Argmax(row)
		} else {
			ids, probs := d.sampler.Dist(row)
			if len(d.qs) <= i {
				d.qs = append(d.qs, sample.Dist{})
			}
			q := &d.qs[i]
			q.IDs, q.Probs = append(q.IDs[:0], ids...), append(q.Probs[:0], probs...)
			next = d.sampler.Draw(ids, probs)
		}
		if next < 0 {
			return fmt.Errorf("the drafter's logits after %d tokens are not numbers", d.s.Pos()+d.s.Pending())
		}
		d.drafts = append(d.drafts, next)
		toks = d.drafts[i : i+1]
	}
	return nil
}

// catchUp feeds the drafter all its pending tokens but the last by
// prefill when there are more than catchRows of them (after plain steps),
// with the head on the last row alone (model.PrefillLast: the others'
// logits go unused; forge-tiny's drafter, int8 activations, 64 tokens:
// 11–14 µs a token against 17–19 with every row's logits, and 13–15 as
// Verify blocks of 16; BENCHMARKS.md issue 14). Fewer (the last draft
// and the target's token after a round that kept every draft) go into
// the round's first Verify call, as decode steps, where a prefill of one
// token, logits and all, cost forge-tiny's drafter 24–43 µs against 18
// for a Verify row.
func (d *drafter) catchUp(ctx context.Context) error {
	n := len(d.pending)
	if n <= 1+catchRows {
		return nil
	}
	if _, err := d.m.PrefillLast(ctx, d.s, d.pending[:n-1], 0); err != nil {
		d.reset()
		return err
	}
	d.fed = append(d.fed, d.pending[:n-1]...)
	d.pending = append(d.pending[:0], d.pending[n-1])
	return nil
}

// settle keeps the drafter's rows for the tokens the target kept: the
// round's lead rows, then those of its first used drafts (the anchor,
// then drafts[:used−1]), and owes the token that ends the round (next,
// −1 when the reply ended).
func (d *drafter) settle(used int, next int) {
	keep := min(used, d.rows) // rows: the anchor and drafts[:k−1]
	d.s.Commit(d.lead + keep)
	d.fed = append(d.fed, d.pending...) // the lead and the anchor
	if keep > 1 {
		d.fed = append(d.fed, d.drafts[:keep-1]...)
	}
	d.pending = d.pending[:0]
	if used > d.rows { // every draft was kept: the last one was never fed
		d.pending = append(d.pending, d.drafts[used-2])
	}
	if next >= 0 {
		d.pending = append(d.pending, next)
	}
}

// adapt chooses the draft length of each round from the running
// acceptance rate and the measured costs of a round's parts:
//
//	tokens per round  E(k) = (1 − α^(k+1)) / (1 − α)   (each draft kept with probability α, as the
//	                  acceptance rule keeps i.i.d. drafts; the +1 is the token the target adds)
//	cost of a round   C(k) = k·c_draft + c_step + k·c_row
//
// where c_step is one plain decode step of the target, c_row what each
// more row adds to a verify block and c_draft one drafter step, all
// running means of measured times (a reply first times two plain steps,
// then two rounds of adaptMeasure drafts). The round's k maximizes
// E(k)/C(k). When even the best k makes fewer tokens per second than
// plain decoding (1/c_step), adapt runs plain decode steps for adaptPlain
// tokens, then one round again to refresh α, doubling the plain stretch
// (up to adaptPlainMax) each time drafting still does not pay, so that a
// collapsed acceptance costs a probe round every few hundred tokens; when drafting
// could not pay even if every draft were kept (α = 1: the verify rows and
// the drafter cost more than the steps they save), it stops drafting for
// the reply, and times one round again at the start of a reply once
// adaptPlainMax plain steps have passed since its last, its times replacing
// the running means of the drafter's and the rows' costs: the costs that
// ruled drafting out may have been a cold start's (a run's first verify
// blocks took 3–4× the steady time, BENCHMARKS.md) or a busy moment's, and
// an engine that serves many replies would otherwise never time them
// again. Only at a reply's start: there the drafter has just consumed the
// prompt, where later it would first have to catch up on every plain step
// (a prefill of up to adaptPlainMax tokens).
//
// The converse holds for c_step: while every round drafts, no plain step
// would time it again, and the first ones are a cold process's (forge-tiny:
// 150–350 µs in a fresh process against 95 µs steady, BENCHMARKS.md),
// which makes plain decoding look slow and, through c_row = (verify − c_step)/k,
// the verify rows cheap, so drafting went on at 0.6–0.9× plain speed. So c_step
// starts as the least of the first adaptStepWarm timed steps, and while it
// drafts adapt runs two plain steps after adaptRestep rounds without one,
// the interval doubling up to adaptRestepMax rounds: a few steps in the
// first hundreds of rounds, one pair in every 256 rounds after.
type adapt struct {
	maxK        int
	fixed       bool    // every round drafts maxK tokens (Options.DraftFixed)
	acc, tries  float64 // decayed counts of kept drafts and of drafts decided
	step, row   float64 // seconds: plain step, each more verify row (running means; 0 unknown)
	draft       float64 // seconds per drafter step
	plainUntil  int     // reply length until which decode runs plain steps
	probe       bool    // the next round after plainUntil probes the acceptance again
	stretch     int     // plain steps before the next probe
	plainProbes int     // plain steps timed so far
	rounds      int     // rounds timed so far
	plainRun    int     // plain steps since the last round, over replies
	retime      bool    // the next round's times replace the means (they are stale)
	replyStart  bool    // next has not been asked yet in this reply
	sinceStep   int     // rounds since the last plain step
	restep      int     // rounds without a plain step after which two run (0: adaptRestep)
}

const (
	adaptDecay     = 0.9  // weight of the past in the acceptance counts, per round
	adaptAvg       = 0.2  // weight of a new time in the running means
	adaptPlain     = 32   // plain steps before the first probe round once drafting does not pay
	adaptPlainMax  = 1024 // the longest stretch of plain steps between probes
	adaptMeasure   = 3    // drafts per measuring round
	adaptStepWarm  = 4    // timed plain steps whose least starts c_step
	adaptRestep    = 16   // rounds without a plain step before two run to time c_step again …
	adaptRestepMax = 256  // … doubling up to this many
)

func (a *adapt) init(maxK int, fixed bool) { a.maxK, a.fixed = maxK, fixed }

// reset starts a reply: the acceptance rate starts again from its prior,
// the measured times carry over.
func (a *adapt) reset() {
	a.acc, a.tries = 1, 2 // a prior of α = 0.5 worth two drafts
	a.plainUntil, a.probe, a.stretch = 0, false, adaptPlain
	a.replyStart = true
}

// rate returns the running acceptance rate α.
func (a *adapt) rate() float64 { return a.acc / a.tries }

// next returns the draft length of the round at reply length n (0: a
// plain step).
func (a *adapt) next(n int) int {
	start := a.replyStart
	a.replyStart = false
	switch {
	case a.fixed:
		return a.maxK
	case n < a.plainUntil:
		return 0
	case a.plainProbes < 2: // time a plain step (the second: the first may be cold)
		return 0
	case a.rounds < 2: // time the drafter and the verify rows (the first round may be cold)
		return min(adaptMeasure, a.maxK)
	}
	if a.sinceStep >= max(a.restep, adaptRestep) { // time c_step again (see adapt)
		a.restep = min(2*max(a.restep, adaptRestep), adaptRestepMax)
		a.plainUntil = n + 2
		return 0
	}
	if _, r := a.best(1); r*a.step < 1 { // drafting cannot pay, as last measured
		if !start || a.plainRun < adaptPlainMax {
			a.plainUntil = math.MaxInt // for the rest of the reply
			return 0
		}
		a.retime = true // time the costs again
		return min(adaptMeasure, a.maxK)
	}
	k, r := a.best(min(a.rate(), 0.999))
	switch {
	case r*a.step >= 1:
		a.stretch = adaptPlain
	case !a.probe:
		a.plainUntil, a.probe = n+a.stretch, true
		a.stretch = min(2*a.stretch, adaptPlainMax)
		return 0
	}
	a.probe = false
	return k
}

// best returns the k that maximizes E(k)/C(k) at acceptance rate alpha,
// and that rate in tokens per second.
func (a *adapt) best(alpha float64) (int, float64) {
	best, bestK := 0.0, 1
	for k := 1; k <= a.maxK; k++ {
		e := float64(k + 1)
		if alpha < 1 {
			e = (1 - math.Pow(alpha, float64(k+1))) / (1 - alpha)
		}
		if r := e / (float64(k)*a.draft + a.step + float64(k)*a.row); r > best {
			best, bestK = r, k
		}
	}
	return bestK, best
}

// plainStep records the time of a plain decode step.
func (a *adapt) plainStep(d time.Duration) {
	a.plainRun++
	a.plainProbes++
	a.sinceStep = 0
	if a.plainProbes == 1 {
		return // cold
	}
	if a.plainProbes <= 1+adaptStepWarm { // still perhaps a cold process's: keep the least
		if a.step == 0 || d.Seconds() < a.step {
			a.step = d.Seconds()
		}
		return
	}
	a.step = mean(a.step, d.Seconds())
}

// round records a round of k drafts of which kept were kept, and the
// times of its drafting and its verify block.
func (a *adapt) round(k, kept int, draft, verify time.Duration) {
	decided := float64(kept)
	if kept < k {
		decided++
	}
	a.plainRun = 0
	a.sinceStep++
	a.acc = adaptDecay*a.acc + float64(kept)
	a.tries = adaptDecay*a.tries + decided
	if a.rounds++; a.rounds == 1 {
		return // cold
	}
	if a.retime { // after adaptPlainMax plain steps the means are stale: start them again
		a.draft, a.row, a.retime = 0, 0, false
	}
	a.draft = mean(a.draft, draft.Seconds()/float64(k))
	if a.step > 0 {
		a.row = mean(a.row, max(verify.Seconds()-a.step, 0)/float64(k))
	}
}

func mean(old, v float64) float64 {
	if old == 0 {
		return v
	}
	return old + adaptAvg*(v-old)
}
