package generate

import (
	"context"
	"errors"
	"slices"
	"testing"

	"forge/model"
)

// TestDraftCatchUp: the drafter's catch-up after plain steps feeds its
// pending tokens but the last, in order, by one prefill (the next row's
// logits equal those of a State given the same prefill, bit for bit, in
// float32 and int8 activations), records them as fed and leaves the last
// pending; at most catchRows+1 pending tokens wait for the round's first
// Verify call instead; a cancelled catch-up leaves the drafter empty.
func TestDraftCatchUp(t *testing.T) {
	tm, tok := tiny(t)
	dm, _ := tinyDraft(t)
	toks := codePrompt(t, tok, 12)
	if len(toks) < 60 {
		t.Fatalf("prompt of %d tokens, want 60", len(toks))
	}
	for _, act := range []model.Act{model.ActFloat32, model.ActInt8} {
		e := New(tm, tok, Options{Draft: dm, DraftK: 3, Act: act, NoWarm: true})
		d := e.draft
		dm.Forward(d.s, toks[:5])
		d.fed = append(d.fed[:0], toks[:5]...)

		d.pending = append(d.pending[:0], toks[5:5+catchRows+1]...)
		if err := d.catchUp(t.Context()); err != nil || d.s.Pos() != 5 || len(d.pending) != catchRows+1 {
			t.Fatalf("%v: %d pending tokens were fed (%v)", act, catchRows+1, err)
		}
		d.pending = append(d.pending[:0], toks[5:59]...) // 53 fed
		if err := d.catchUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.fed, toks[:58]) || !slices.Equal(d.pending, toks[58:59]) || d.s.Pos() != 58 || d.s.Pending() != 0 {
			t.Fatalf("%v: after the catch-up the drafter holds %d tokens at position %d (%d pending rows), pending %v",
				act, len(d.fed), d.s.Pos(), d.s.Pending(), d.pending)
		}
		ref := dm.NewState()
		ref.SetAct(act)
		dm.Forward(ref, toks[:5])
		if _, err := dm.PrefillLast(t.Context(), ref, toks[5:58], 0); err != nil {
			t.Fatal(err)
		}
		got, err := dm.Verify(d.s, toks[58:60])
		if err != nil {
			t.Fatal(err)
		}
		want, err := dm.Verify(ref, toks[58:60])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Data, want.Data) {
			t.Fatalf("%v: the caught-up drafter's logits differ from a State given the same prefill", act)
		}
		d.s.Commit(0)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		d.pending = append(d.pending[:0], toks[:40]...)
		if err := d.catchUp(ctx); !errors.Is(err, context.Canceled) || len(d.fed) != 0 || d.s.Pos() != 0 {
			t.Fatalf("%v: a cancelled catch-up: %v, the drafter at %d tokens (%d fed)", act, err, d.s.Pos(), len(d.fed))
		}
	}
}
