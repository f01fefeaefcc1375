package forge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"forge/corpus"
	"forge/eval"
	"forge/model"
	"forge/source"
	"forge/tensor"
	"forge/tokenizer"
)

// PPLDefaultCtx is the window length PPL uses when PPLConfig.Ctx is 0.
const PPLDefaultCtx = 512

// pplChunkFloats bounds the logits one Forward call returns (T·vocab
// floats, 256 MiB): longer windows are fed in chunks, the state carried.
const pplChunkFloats = 1 << 26

// PPLConfig configures PPL. Zero values are the defaults.
type PPLConfig struct {
	Model string // checkpoint or bundle directory (with its tokenizer)
	// Data is a token source (package corpus): "FILE" takes every
	// window, "FILE:ROWS" samples ROWS of them with Seed. .txt text and
	// .jsonl chat are tokenized as one stream and cut; .json and .npy
	// token rows are taken as given (rows longer than Ctx keep their first
	// Ctx tokens, shorter ones are an error).
	Data string
	Ctx  int    // tokens per window (0: PPLDefaultCtx); at least 2
	Seed uint64 // sampling of FILE:ROWS
	// Progress, if set, is called after each window with windows done and total.
	Progress func(done, total int64)
}

// PPLReport is the result of PPL.
type PPLReport struct {
	Model   string  `json:"model"`
	Data    string  `json:"data"`
	Ctx     int     `json:"ctx"`
	Windows int     `json:"windows"`
	Scored  int     `json:"tokens_scored"` // Windows·(Ctx−1) predictions
	MeanNLL float64 `json:"mean_nll"`      // nats per scored token
	PPL     float64 `json:"ppl"`           // exp(MeanNLL)
	Seconds float64 `json:"seconds"`
	// TokensPerSec is the tokens run through the model (Windows·Ctx) per
	// second of forward passes and scoring.
	TokensPerSec float64 `json:"tokens_per_second"`
}

// PPL measures the plain perplexity of a model or bundle on a text: the
// source's token stream is cut into non-overlapping windows of Ctx tokens
// (corpus.Load with Seq = Ctx; a final partial window is dropped), each run
// from an empty state, and every position t < Ctx−1 of a window scores the
// next token x[t+1] (so every token after the first is predicted):
//
//	NLL = logsumexp(z_t) − z_t[x_{t+1}],   ppl = exp(Σ NLL / N)
//
// with z_t the logits at t and N = windows·(Ctx−1). Sums are in float64.
// A text too short for one window is an error that says so.
func PPL(ctx context.Context, cfg PPLConfig) (*PPLReport, error) {
	if cfg.Ctx == 0 {
		cfg.Ctx = PPLDefaultCtx
	}
	if cfg.Ctx < 2 {
		return nil, fmt.Errorf("ppl: windows of %d tokens: a window needs at least 2 (one to predict from, one to score)", cfg.Ctx)
	}
	rows, err := pplRows(cfg)
	if err != nil {
		return nil, err
	}
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("ppl: %w", err)
	}
	defer src.Close()
	for i, r := range rows {
		if err := m.CheckTokens(r); err != nil {
			return nil, fmt.Errorf("ppl: %s: window %d: %w", cfg.Data, i, err)
		}
	}
	rep := &PPLReport{Model: cfg.Model, Data: cfg.Data, Ctx: cfg.Ctx, Windows: len(rows)}
	start := time.Now()
	st := m.NewState()
	var sum float64
	for i, r := range rows {
		st.Reset()
		nll, err := windowNLL(ctx, m, st, r)
		if err != nil {
			return nil, fmt.Errorf("ppl: %s: window %d: %w", cfg.Data, i, err)
		}
		sum += nll
		rep.Scored += len(r) - 1
		if cfg.Progress != nil {
			cfg.Progress(int64(i+1), int64(len(rows)))
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.MeanNLL = sum / float64(rep.Scored)
	rep.PPL = math.Exp(rep.MeanNLL)
	if rep.Seconds > 0 {
		rep.TokensPerSec = float64(rep.Windows*rep.Ctx) / rep.Seconds
	}
	return rep, nil
}

// pplRows reads the windows with the model's tokenizer.
func pplRows(cfg PPLConfig) ([][]int, error) {
	sp, err := corpus.ParseSpec(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("ppl: data: %w", err)
	}
	tok, err := tokenizer.Load(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("ppl: reading the data needs the model's tokenizer: %w", err)
	}
	set, err := corpus.Load([]corpus.Spec{sp}, tok, corpus.Options{Seq: cfg.Ctx, Seed: cfg.Seed})
	if err != nil {
		if errors.Is(err, corpus.ErrTooFewRows) {
			return nil, fmt.Errorf("ppl: %w (the text is too short for one window of %d tokens)", err, cfg.Ctx)
		}
		return nil, fmt.Errorf("ppl: %w", err)
	}
	return set.Rows, nil
}

// windowNLL runs one window from st (empty) and returns the summed NLL of
// its tokens 1…T−1. The whole window is fed (the last position's logits
// go unused) so that the logits are those of one prefill of the window;
// windows whose logits would pass pplChunkFloats are fed in chunks, the
// state carried over, which changes only the float rounding.
func windowNLL(ctx context.Context, m *model.Model, st *model.State, toks []int) (float64, error) {
	chunk := max(1, min(pplChunkFloats/m.Config().Vocab, model.DefaultChunk))
	var sum float64
	err := m.Prefill(ctx, st, toks, chunk, func(lo int, lg *tensor.Matrix) error {
		for t := lo; t < lo+lg.Rows && t+1 < len(toks); t++ {
			sum += eval.NLL(lg.Row(t-lo), toks[t+1])
		}
		return nil
	})
	return sum, err
}
