package model

import (
	"context"
	"errors"
	"fmt"
	"math"

	"forge/tensor"
)

// ErrContext is wrapped by errors for sequences longer than the model's
// context (Config.MaxContext, max_position_embeddings).
var ErrContext = errors.New("longer than the model's context")

// DefaultChunk is the most tokens Prefill runs in one Forward call: large
// enough that the matrix products read each weight once for many rows (the
// panel GEMM is at its throughput from T ≈ 256), small enough that one call
// holds little memory ([T, vocab] logits) and a cancellation is seen soon.
const DefaultChunk = 512

// ForwardContext is Forward that checks ctx before each layer. When ctx
// is done it returns ctx's error and s is left unusable — some layers have
// consumed the tokens, others not — until Reset or Rewind to a Mark taken
// before the call (both restore it exactly); any other use panics.
func (m *Model) ForwardContext(ctx context.Context, s *State, tokens []int) (*tensor.Matrix, error) {
	return m.forward(ctx, s, tokens, false)
}

// Prefill runs tokens through s in Forward calls of at most chunk tokens
// (0: DefaultChunk; 1: the recurrent decode form, one token per call),
// checking ctx between layers, and hands each call's logits [n, vocab] to
// fn with the index t0 of its first token. It refuses tokens outside the
// vocabulary or beyond the model's context before running anything. Logits
// holding a NaN or ±Inf are a *NonFiniteError; when s started empty it
// names the first activation of the model that was not finite (found by
// running the tokens again with an observer), so a damaged weight is
// traced to its layer. On any error s must be Reset before further use.
func (m *Model) Prefill(ctx context.Context, s *State, tokens []int, chunk int, fn func(t0 int, logits *tensor.Matrix) error) error {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	start := s.pos
	if err := m.checkRun(start, tokens); err != nil {
		return err
	}
	for t0 := 0; t0 < len(tokens); t0 += chunk {
		lg, err := m.forward(ctx, s, tokens[t0:min(t0+chunk, len(tokens))], false)
		if err != nil {
			return err
		}
		if r, ok := firstNonFinite(lg); ok {
			e := &NonFiniteError{Position: start + t0 + r}
			if start == 0 {
				e.Where = m.locateNonFinite(tokens[:t0+lg.Rows])
			}
			return e
		}
		if err := fn(t0, lg); err != nil {
			return err
		}
	}
	return nil
}

// PrefillLast runs tokens through s as Prefill does (chunks of at most
// chunk tokens, the same checks and errors) and returns the logits of the
// last token alone [vocab] (owned by s, valid until its next call): the
// head multiplies only that row, which is all generation needs (a
// 248k-row head costs as much per row as several layers). An empty tokens
// is an error.
func (m *Model) PrefillLast(ctx context.Context, s *State, tokens []int, chunk int) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("no tokens to prefill")
	}
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	start := s.pos
	if err := m.checkRun(start, tokens); err != nil {
		return nil, err
	}
	var lg *tensor.Matrix
	for t0 := 0; t0 < len(tokens); t0 += chunk {
		t1 := min(t0+chunk, len(tokens))
		var err error
		if lg, err = m.forward(ctx, s, tokens[t0:t1], t1 == len(tokens)); err != nil {
			return nil, err
		}
	}
	if _, bad := firstNonFinite(lg); bad {
		e := &NonFiniteError{Position: start + len(tokens) - 1}
		if start == 0 {
			e.Where = m.locateNonFinite(tokens)
		}
		return nil, e
	}
	return lg.Row(0), nil
}

// Row runs tokens through s from an empty state (s is Reset first) in one
// Forward call and returns their logits [T, vocab] (owned by s), with the
// checks and errors of Prefill: a whole row scored at once (traces,
// evaluation, llama.cpp windows).
func (m *Model) Row(ctx context.Context, s *State, tokens []int) (*tensor.Matrix, error) {
	s.Reset()
	var out *tensor.Matrix
	err := m.Prefill(ctx, s, tokens, len(tokens), func(_ int, lg *tensor.Matrix) error {
		out = lg
		return nil
	})
	return out, err
}

// checkRun refuses tokens outside the vocabulary and a run that would go
// past the context.
func (m *Model) checkRun(pos int, tokens []int) error {
	if err := m.CheckTokens(tokens); err != nil {
		return err
	}
	if n := m.cfg.MaxContext; n > 0 && pos+len(tokens) > n {
		return fmt.Errorf("%d tokens from position %d: %w of %d tokens (max_position_embeddings)", len(tokens), pos, ErrContext, n)
	}
	return nil
}

// NonFiniteError reports logits that are NaN or ±Inf.
type NonFiniteError struct {
	Position int    // the first position whose logits are not finite
	Where    string // the first activation that was not, e.g. "layers.3.mlp_out" ("" if unknown)
}

func (e *NonFiniteError) Error() string {
	msg := fmt.Sprintf("the model's logits at position %d are not finite (NaN or ±Inf)", e.Position)
	if e.Where != "" {
		msg += "; the first non-finite activation is " + e.Where + " (a damaged weight or an overflow there)"
	}
	return msg
}

// firstNonFinite returns the first row of lg holding a NaN or ±Inf.
func firstNonFinite(lg *tensor.Matrix) (int, bool) {
	for r := range lg.Rows {
		for _, v := range lg.Row(r) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return r, true
			}
		}
	}
	return 0, false
}

// locateNonFinite runs tokens from an empty State with an observer and
// returns the name of the first observed activation (embedding, each
// layer's intermediates in order, final norm) holding a NaN or ±Inf, or
// "lm_head" when only the logits do.
func (m *Model) locateNonFinite(tokens []int) string {
	s := m.NewState()
	where := ""
	s.Observe = func(name string, x *tensor.Matrix) {
		if where == "" {
			if _, bad := firstNonFinite(x); bad {
				where = name
			}
		}
	}
	for t0 := 0; t0 < len(tokens) && where == ""; t0 += DefaultChunk {
		m.Forward(s, tokens[t0:min(t0+DefaultChunk, len(tokens))])
	}
	if where == "" {
		return "lm_head"
	}
	return where
}
