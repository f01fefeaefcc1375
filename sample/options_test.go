package sample

import (
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		o    Options
		want []string // substrings of the error; none: valid
	}{
		{"zero value (greedy)", Options{}, nil},
		{"full", Options{Temperature: 0.7, TopK: 20, TopP: 0.95, MinP: 0.05, Presence: 1.5,
			DRY: DRY{Multiplier: 0.8, Base: 1.75, Allowed: 8, Window: 4096, MaxMatch: 32}, Seed: 7}, nil},
		{"top_p 1 and min_p 1 are in range", Options{Temperature: 1, TopP: 1, MinP: 1}, nil},
		{"negative presence favours repeats", Options{Temperature: 1, Presence: -2}, nil},
		{"top_p", Options{TopP: 1.5}, []string{"top_p 1.5 is outside [0, 1]"}},
		{"top_p NaN", Options{TopP: nan}, []string{"top_p NaN is outside [0, 1]"}},
		{"min_p", Options{MinP: -0.1}, []string{"min_p -0.1 is outside [0, 1]"}},
		{"temperature negative", Options{Temperature: -1}, []string{"temperature -1 is negative (0 means greedy)"}},
		{"temperature NaN", Options{Temperature: nan}, []string{"temperature NaN is not a finite number"}},
		{"temperature Inf", Options{Temperature: inf}, []string{"temperature +Inf is not a finite number"}},
		{"top_k", Options{TopK: -1}, []string{"top_k -1 is negative (0 means off)"}},
		{"presence", Options{Presence: nan}, []string{"presence_penalty NaN is not a finite number"}},
		{"dry_multiplier", Options{DRY: DRY{Multiplier: -0.5}}, []string{"dry_multiplier -0.5 is negative"}},
		{"dry_base", Options{DRY: DRY{Base: 0.5}}, []string{"dry_base 0.5 is below 1 (0 means 1.75)"}},
		{"dry_base Inf", Options{DRY: DRY{Base: inf}}, []string{"dry_base +Inf is not a finite number"}},
		{"dry ints", Options{DRY: DRY{Allowed: -1, Window: -2, MaxMatch: -3}}, []string{
			"dry_allowed -1 is negative (0 means 8)", "dry_window -2 is negative (0 means 4096)",
			"dry_max_match -3 is negative (0 means 32)"}},
		{"every error is reported", Options{TopP: 2, TopK: -5}, []string{"top_p 2", "top_k -5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNewPanics(t *testing.T) {
	mustPanic(t, "invalid options", func() { New(Options{TopP: 2}, nil, 10) })
	mustPanic(t, "empty vocabulary", func() { New(Options{}, nil, 0) })
	s := New(Options{Temperature: 1}, nil, 4)
	mustPanic(t, "wrong logits length", func() { s.Dist(make([]float32, 5)) })
	mustPanic(t, "greedy wrong logits length", func() { New(Options{}, nil, 4).Sample(make([]float32, 3)) })
	mustPanic(t, "Accept outside the vocabulary", func() { s.Accept(4) })
	mustPanic(t, "Accept negative", func() { s.Accept(-1) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
