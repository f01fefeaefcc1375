package model_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/model"
	"forge/tensor"
)

// TestPrefillChunks: Prefill in chunks of 512 (the whole row here: bit for
// bit), 64 and 1 (the decode form) gives Forward's logits; chunk
// boundaries move the DeltaNet rounding, hence logitTol.
func TestPrefillChunks(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	toks := randTokens(rand.New(rand.NewPCG(5, 6)), 300, m.Config().Vocab)
	whole := copyOf(m.Forward(m.NewState(), toks))
	for _, chunk := range []int{0, 64, 1} {
		var got []float32
		next := 0
		err := m.Prefill(context.Background(), m.NewState(), toks, chunk, func(t0 int, lg *tensor.Matrix) error {
			if t0 != next {
				t.Fatalf("chunk %d: t0 = %d, want %d", chunk, t0, next)
			}
			next += lg.Rows
			got = append(got, lg.Data...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(got, whole)
		if chunk == 0 && d != 0 || d > logitTol {
			t.Errorf("chunk %d: max |Δ| = %.3g", chunk, d)
		}
	}
}

// TestPrefillCancel: a cancelled context stops Prefill with ctx's error;
// the State is then unusable until Reset, after which it runs as new.
func TestPrefillCancel(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	toks := randTokens(rand.New(rand.NewPCG(7, 8)), 100, m.Config().Vocab)
	ctx, cancel := context.WithCancel(context.Background())
	s := m.NewState()
	calls := 0
	err := m.Prefill(ctx, s, toks, 10, func(int, *tensor.Matrix) error {
		if calls++; calls == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Fatalf("err = %v after %d calls, want context.Canceled after 3", err, calls)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Forward on a cancelled State did not panic")
			}
		}()
		m.Forward(s, toks[:1])
	}()
	s.Reset()
	if d := maxAbsDiff(copyOf(m.Forward(s, toks)), copyOf(m.Forward(m.NewState(), toks))); d != 0 {
		t.Errorf("after Reset: max |Δ| = %g", d)
	}
}

// shortContext is a source whose config claims a context of n tokens.
type shortContext struct {
	model.Source
	n int
}

func (s shortContext) Config() (model.Config, error) {
	c, err := s.Source.Config()
	c.MaxContext = s.n
	return c, err
}

// TestPrefillContext: a run past max_position_embeddings is refused before
// anything runs, whether it starts empty or continues a State.
func TestPrefillContext(t *testing.T) {
	ck, err := checkpoint.Open(repoPath("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	const n = 64
	m, err := model.Load(shortContext{ck, n})
	if err != nil {
		t.Fatal(err)
	}
	long := make([]int, n+1)
	if err := m.CheckTokens(long); !errors.Is(err, model.ErrContext) {
		t.Errorf("CheckTokens(%d tokens) = %v, want ErrContext", len(long), err)
	}
	s := m.NewState()
	m.Forward(s, long[:n-10])
	err = m.Prefill(context.Background(), s, long[:11], 0, func(int, *tensor.Matrix) error {
		t.Fatal("ran past the context")
		return nil
	})
	if !errors.Is(err, model.ErrContext) || s.Pos() != n-10 {
		t.Errorf("Prefill past the context: %v, pos %d", err, s.Pos())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Forward past the context did not panic")
			}
		}()
		m.Forward(s, long[:11])
	}()
}

// poisoned wraps a source so that one matrix's products come out NaN from
// a given column on: a damaged weight.
type poisoned struct {
	model.Source
	name string
}

type nanLinear struct{ model.Linear }

func (l nanLinear) Mul(dst, x *tensor.Matrix) {
	l.Linear.Mul(dst, x)
	dst.Data[0] = float32(math.NaN())
}

func (p poisoned) Linear(name string) (model.Linear, error) {
	l, err := p.Source.Linear(name)
	if name == p.name {
		return nanLinear{l}, err
	}
	return l, err
}

// TestPrefillNonFinite: NaN logits are an error naming the first
// activation that went bad, not a result.
func TestPrefillNonFinite(t *testing.T) {
	ck, err := checkpoint.Open(repoPath("models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, c := range []struct{ tensor, where string }{
		{"layers.2.mlp.down_proj.weight", "layers.2.mlp_out"},
		{"layers.3.self_attn.v_proj.weight", "layers.3.self_attn.v"},
		{"lm_head.weight", "lm_head"},
	} {
		m, err := model.Load(poisoned{ck, c.tensor})
		if err != nil {
			t.Fatal(err)
		}
		toks := randTokens(rand.New(rand.NewPCG(9, 10)), 20, m.Config().Vocab)
		err = m.Prefill(context.Background(), m.NewState(), toks, 0, func(int, *tensor.Matrix) error {
			t.Fatal("non-finite logits were handed on")
			return nil
		})
		var nf *model.NonFiniteError
		if !errors.As(err, &nf) || nf.Where != c.where || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%s poisoned: %v, want the first bad activation %s", c.tensor, err, c.where)
		}
	}
}

// TestPrefillLast: PrefillLast's logits are Prefill's last row (the head
// of one row may take another kernel than the head of T rows, hence
// logitTol), the state ends at the same position and decodes the same,
// and an empty prompt is refused.
func TestPrefillLast(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	toks := randTokens(rand.New(rand.NewPCG(9, 10)), 700, m.Config().Vocab)
	ref := m.NewState()
	var want []float32
	if err := m.Prefill(context.Background(), ref, toks, 256, func(_ int, lg *tensor.Matrix) error {
		want = copyOf(tensor.FromSlice(1, lg.Cols, lg.Row(lg.Rows-1)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := m.NewState()
	got, err := m.PrefillLast(context.Background(), s, toks, 256)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != m.Config().Vocab || s.Pos() != ref.Pos() {
		t.Fatalf("len %d pos %d, want %d and %d", len(got), s.Pos(), m.Config().Vocab, ref.Pos())
	}
	if d := maxAbsDiff(got, want); d > logitTol {
		t.Errorf("last logits: max |Δ| = %.3g > %g", d, logitTol)
	}
	a := copyOf(m.Forward(s, []int{7}))
	b := copyOf(m.Forward(ref, []int{7}))
	if d := maxAbsDiff(a, b); d != 0 {
		t.Errorf("decode after PrefillLast differs by %.3g", d)
	}
	if _, err := m.PrefillLast(context.Background(), m.NewState(), nil, 0); err == nil {
		t.Error("an empty prompt was accepted")
	}
}
