package model_test

import (
	"path/filepath"
	"testing"

	"forge/bundle"
	"forge/checkpoint"
	"forge/internal/tinylut"
	"forge/model"
	"forge/tensor"
)

// mulOnly hides every matrix's MulRows but the embedding's, so that a
// model loaded through it runs each product with Mul alone (the path
// before decode stages, and the one of any Linear without MulRows).
type mulOnly struct{ model.Source }

type plainLinear struct{ l model.Linear }

func (p plainLinear) Mul(dst, x *tensor.Matrix) { p.l.Mul(dst, x) }
func (p plainLinear) Dims() (out, in int)       { return p.l.Dims() }

func (s mulOnly) Linear(name string) (model.Linear, error) {
	l, err := s.Source.Linear(name)
	if err != nil || name == "embed_tokens.weight" {
		return l, err
	}
	return plainLinear{l}, nil
}

// TestStageProducts: decode steps whose products run as stages (several
// matrices of one input split by rows over the pool, lut.Matrix and
// tensor.Dense MulRows) give bit for bit the logits of the same model
// with every product run by Mul: forge-tiny in bf16 and rounded to LUT4,
// and the LUT2 bundle fixture with Hadamard rotations and low-rank terms.
func TestStageProducts(t *testing.T) {
	tiny := repoPath("models", "forge-tiny")
	ck, err := checkpoint.Open(tiny)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	bu, err := bundle.Open(filepath.Join("..", "bundle", "testdata", "v1-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	defer bu.Close()
	for _, c := range []struct {
		name string
		src  model.Source
	}{{"forge-tiny", ck}, {"forge-tiny-lut4", tinylut.Source{Checkpoint: ck}}, {"v1-tiny", bu}} {
		staged, err := model.Load(c.src)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := model.Load(mulOnly{c.src})
		if err != nil {
			t.Fatal(err)
		}
		toks := []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2}
		s1, s2 := staged.NewState(), plain.NewState()
		staged.Forward(s1, toks[:5])
		plain.Forward(s2, toks[:5])
		a, b := decodeLogits(staged, s1, toks[5:]), decodeLogits(plain, s2, toks[5:])
		if !bitsEqual(a, b) {
			t.Errorf("%s: decode logits with stages differ from Mul's (max |Δ| = %.3g)", c.name, maxAbsDiff(a, b))
		}
	}
}
