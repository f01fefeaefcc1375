package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"forge/internal/budget"
	"forge/model"
	"forge/tensor"
)

// ErrVocab marks a candidate whose vocabulary differs from the trace's.
var ErrVocab = errors.New("vocabulary mismatch")

// Result is a candidate scored against a trace, position by position, in
// trace order (row by row, t = 0…T−2 within a row).
type Result struct {
	Definition string    // the trace's (Definition)
	KL         []float64 // [positions] KL(p‖q) in nats: KLFull or KLTopK
	NLL        []float64 // [positions] the candidate's −log q(x_{t+1}), in nats
	RefNLL     []float64 // [positions] the reference's −log p(x_{t+1}), from the trace
	Same       []bool    // [positions] argmax p = argmax q (first index on ties; top-K: the trace's top-1)
	Tokens     int       // tokens run through the candidate
	Seconds    float64   // wall time of the forward passes and scoring

	RowPositions []int       // [rows] scored positions of each row (Trace.RowPositions)
	Sources      []RowSource // the rows' data files (Trace.Sources), nil when unknown
}

// ScoreOptions control Score.
type ScoreOptions struct {
	// Progress, if set, is called with tokens done and total.
	Progress func(done, total int64)
	// KV is the candidate's KV cache format (model.KVInt8 measures what
	// the int8 cache costs against the trace).
	KV model.KV
	// Act is the candidate's activation precision (model.ActInt8All
	// measures what int8 activations cost decode).
	Act model.Act
	// Rows, if positive, scores only the trace's first Rows rows.
	Rows int
	// Logits, if set, computes row r's logits [T, vocab] in place of a
	// forward of its tokens from an empty state (a sweep starts from
	// cached layer inputs); the matrix need only last until the next call.
	Logits func(ctx context.Context, r int, tokens []int) (*tensor.Matrix, error)
}

// Score runs the candidate m over the trace's token rows, each from an
// empty state in one prefill as Record ran the reference, and compares
// its next-token distributions with the trace's at every scored position:
// KL (KLFull for a full trace, KLTopK for a top-K one), top-1 agreement,
// and the NLL of the actual next token (the candidate's NLL is computed in
// float64 from its logits, L − z_tok, as Record computes the reference's).
// The candidate must have the trace's vocabulary (else ErrVocab); a
// stored value that cannot be a log-prob, probability or NLL is an error
// wrapping ErrTrace that names the row and position.
func Score(ctx context.Context, m *model.Model, tr *Trace, opt ScoreOptions) (*Result, error) {
	if err := tr.CheckVocab(m.Config().Vocab); err != nil {
		return nil, err
	}
	rows := len(tr.lens)
	if opt.Rows > 0 {
		rows = min(rows, opt.Rows)
	}
	n := 0
	var total int64
	for _, T := range tr.lens[:rows] {
		n += T - 1
		total += int64(T)
	}
	res := &Result{Definition: tr.Meta.Definition, KL: make([]float64, n), NLL: make([]float64, n),
		RefNLL: make([]float64, n), Same: make([]bool, n), RowPositions: tr.RowPositions()[:rows], Sources: tr.Sources()}
	if rows < len(tr.lens) {
		res.Sources = nil // they count every row of the trace
	}
	start := time.Now()
	st := m.NewStateKV(opt.KV)
	st.SetAct(opt.Act)
	off := 0
	for r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := tr.row(r)
		if err != nil {
			return nil, err
		}
		var lg *tensor.Matrix
		if opt.Logits != nil {
			lg, err = opt.Logits(ctx, r, d.tokens)
		} else {
			lg, err = forwardRow(ctx, m, st, d.tokens)
		}
		if err != nil {
			return nil, fmt.Errorf("trace %s: row %d: the candidate: %w", tr.path, r, err)
		}
		if err := scoreRow(res, off, tr, d, lg); err != nil {
			return nil, fmt.Errorf("trace %s: row %d: %w", tr.path, r, err)
		}
		off += len(d.tokens) - 1
		res.Tokens += len(d.tokens)
		if opt.Progress != nil {
			opt.Progress(int64(res.Tokens), total)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// forwardRow runs a row from an empty state in one Forward call (cancelled
// between layers with ctx) and returns its logits [T, vocab], refusing any
// that are not finite (model.NonFiniteError names the first bad
// activation). The logits of a whole row are held at once: 4·T·vocab
// bytes, checked against the memory available.
func forwardRow(ctx context.Context, m *model.Model, st *model.State, tokens []int) (*tensor.Matrix, error) {
	if err := budget.Memory(fmt.Sprintf("the logits of a %d-token row", len(tokens)), 4*int64(len(tokens))*int64(m.Config().Vocab)); err != nil {
		return nil, err
	}
	return m.Row(ctx, st, tokens)
}

// CheckVocab returns an error wrapping ErrVocab unless a candidate with
// vocab tokens can be scored against the trace.
func (t *Trace) CheckVocab(vocab int) error {
	if vocab != t.Meta.Vocab {
		return fmt.Errorf("trace %s: recorded over a vocabulary of %d tokens, the candidate has %d: %w",
			t.path, t.Meta.Vocab, vocab, ErrVocab)
	}
	return nil
}

// scoreRow fills res[off : off+T−1] from one row's logits, positions in
// parallel.
func scoreRow(res *Result, off int, tr *Trace, d *rowData, lg *tensor.Matrix) error {
	n := len(d.tokens) - 1
	bad := make([]string, n)
	tensor.ParallelGrain(n, 1, func(lo, hi int) {
		tensor.ClearUpper()
		sc := newScorer(tr.Meta.Vocab, tr.Meta.TopK)
		for t := lo; t < hi; t++ {
			bad[t] = sc.position(res, off+t, d, t, lg.Row(t))
		}
	})
	for t, msg := range bad {
		switch msg {
		case "":
		case errNonFinite:
			return fmt.Errorf("position %d: the candidate's logits are not finite", t)
		default:
			return fmt.Errorf("position %d: %s: %w", t, msg, ErrTrace)
		}
	}
	return nil
}

// scorer is one worker's scratch.
type scorer struct {
	k    int
	lq   []float32 // [V] the candidate's log-probs
	lp   []float32 // [V] the reference's (full traces)
	mask []bool    // [V] tailMass scratch (top-K traces)
}

func newScorer(vocab, k int) *scorer {
	sc := &scorer{k: k, lq: make([]float32, vocab)}
	if k == 0 {
		sc.lp = make([]float32, vocab)
	} else {
		sc.mask = make([]bool, vocab)
	}
	return sc
}

// position scores position t of row d (index i of res) from the
// candidate's logits z, and describes what is wrong if it cannot.
func (sc *scorer) position(res *Result, i int, d *rowData, t int, z []float32) string {
	L := LogSoftmax(sc.lq, z)
	if math.IsNaN(L) || math.IsInf(L, 0) {
		return errNonFinite
	}
	res.NLL[i] = L - float64(z[d.tokens[t+1]])
	res.RefNLL[i] = float64(d.refNLL[t])
	if !(res.RefNLL[i] >= 0) || math.IsInf(res.RefNLL[i], 1) {
		return fmt.Sprintf("reference NLL %v", d.refNLL[t])
	}
	if sc.k == 0 {
		V := len(sc.lp)
		if !decodeF32(sc.lp, d.logp[t*4*V:(t+1)*4*V]) {
			return "a stored log-prob is positive or NaN"
		}
		res.KL[i] = KLFull(sc.lp, sc.lq)
		res.Same[i] = Argmax(sc.lp) == Argmax(sc.lq)
		return ""
	}
	k := sc.k
	ids, lps, tail := d.ids[t*k:(t+1)*k], d.lps[t*k:(t+1)*k], float64(d.tail[t])
	if msg := checkTopK(lps, tail); msg != "" {
		return msg
	}
	qTail := tailMass(sc.lq, ids, sc.mask)
	if qTail < 0 {
		return "top-K ids repeat or lie outside the vocabulary"
	}
	qTail = float64(float32(qTail)) // rounded as the trace stores p_tail
	res.KL[i] = KLTopK(ids, lps, tail, sc.lq, qTail)
	res.Same[i] = int(ids[0]) == Argmax(sc.lq)
	return ""
}

// errNonFinite marks a position whose candidate logits hold a NaN or an
// infinity.
const errNonFinite = "non-finite logits"

// checkTopK describes what is wrong with a stored top-K position, or
// returns "": log-probs ≤ 0 (not NaN) in non-increasing order, a tail mass
// in [0, 1].
func checkTopK(lps []float32, tail float64) string {
	for j, v := range lps {
		if !(v <= 0) {
			return fmt.Sprintf("top-K log-prob %v", v)
		}
		if j > 0 && v > lps[j-1] {
			return "top-K log-probs are not in decreasing order"
		}
	}
	if !(tail >= 0 && tail <= 1) {
		return fmt.Sprintf("tail mass %v outside [0, 1]", tail)
	}
	return ""
}
