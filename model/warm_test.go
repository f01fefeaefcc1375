package model_test

import (
	"math"
	"testing"

	"forge/model"
)

// TestWarm: a State Warm has run is empty and computes what a fresh State
// computes, bit for bit (a prompt, then a verify block), with its
// decode-step chooser warm; rows beyond a verify block's 17 are capped.
func TestWarm(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	if !m.Timed() {
		t.Fatal("forge-tiny's steps do not choose between the pool and running alone")
	}
	prompt := []int{11, 42, 7, 300, 5}
	block := []int{9, 18, 27}
	run := func(s *model.State) (a, b []float32) {
		a = append([]float32(nil), m.Forward(s, prompt).Row(len(prompt)-1)...)
		lg, err := m.Verify(s, block)
		if err != nil {
			t.Fatal(err)
		}
		return a, append([]float32(nil), lg.Data...)
	}
	for _, act := range []model.Act{model.ActFloat32, model.ActInt8} {
		fresh := m.NewState()
		fresh.SetAct(act)
		wantP, wantV := run(fresh)

		s := m.NewState()
		s.SetAct(act)
		m.Forward(s, []int{1, 2, 3}) // Warm also empties a used State
		m.Warm(s, 100)
		if s.Pos() != 0 || s.Pending() != 0 {
			t.Fatalf("act %v: after Warm at position %d with %d pending rows, want an empty State", act, s.Pos(), s.Pending())
		}
		if !s.ChooserWarm() {
			t.Errorf("act %v: the decode-step chooser is not warm after Warm", act)
		}
		gotP, gotV := run(s)
		for i := range wantP {
			if math.Float32bits(gotP[i]) != math.Float32bits(wantP[i]) {
				t.Fatalf("act %v: prompt logit %d = %v after Warm, %v fresh", act, i, gotP[i], wantP[i])
			}
		}
		for i := range wantV {
			if math.Float32bits(gotV[i]) != math.Float32bits(wantV[i]) {
				t.Fatalf("act %v: verify logit %d = %v after Warm, %v fresh", act, i, gotV[i], wantV[i])
			}
		}
	}
}
