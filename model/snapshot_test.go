package model_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"forge/model"
)

// TestSnapshotRestore: a Snapshot restored into another State (of either
// KV format) reproduces the logits of the State it came from bit for bit,
// in prefill and decode, after the source went on to other tokens and
// after the target held another sequence; a snapshot of the other KV
// format is refused and leaves the State as it was.
func TestSnapshotRestore(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	r := rand.New(rand.NewPCG(7, 8))
	V := m.Config().Vocab
	prompt, cont := randTokens(r, 45, V), randTokens(r, 20, V)
	for _, kv := range []model.KV{model.KVFloat32, model.KVInt8} {
		src := m.NewStateKV(kv)
		m.Forward(src, prompt)
		sn := src.Snapshot()
		if sn.Pos() != len(prompt) || sn.Bytes() <= 0 {
			t.Fatalf("%v: snapshot pos %d bytes %d", kv, sn.Pos(), sn.Bytes())
		}
		want := copyOf(m.Forward(src, cont))
		wantDec := decodeLogits(m, src, cont[:6])
		m.Forward(src, randTokens(r, 30, V)) // the source moves on

		dst := m.NewStateKV(kv)
		m.Forward(dst, randTokens(r, 70, V)) // the target held something else
		mk := dst.Mark()
		if err := dst.Restore(sn); err != nil {
			t.Fatal(err)
		}
		if dst.Pos() != len(prompt) {
			t.Fatalf("%v: pos after Restore %d", kv, dst.Pos())
		}
		if got := copyOf(m.Forward(dst, cont)); !bitsEqual(got, want) {
			t.Fatalf("%v: prefill logits after Restore differ", kv)
		}
		if got := decodeLogits(m, dst, cont[:6]); !bitsEqual(got, wantDec) {
			t.Fatalf("%v: decode logits after Restore differ", kv)
		}
		// Restoring twice from one snapshot gives the same again.
		if err := dst.Restore(sn); err != nil || !bitsEqual(copyOf(m.Forward(dst, cont)), want) {
			t.Fatalf("%v: second Restore: %v", kv, err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: Rewind to a mark taken before Restore did not panic", kv)
				}
			}()
			dst.Rewind(mk)
		}()

		other := model.KVInt8
		if kv == model.KVInt8 {
			other = model.KVFloat32
		}
		o := m.NewStateKV(other)
		m.Forward(o, prompt[:5])
		err := o.Restore(sn)
		if err == nil || !strings.Contains(err.Error(), "KV cache") || o.Pos() != 5 {
			t.Fatalf("%v snapshot into a %v state: %v, pos %d", kv, other, err, o.Pos())
		}
	}
}
