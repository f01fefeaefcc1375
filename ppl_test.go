package forge_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/checkpoint"
	"forge/corpus"
	"forge/model"
	"forge/tokenizer"
)

var pplData = filepath.Join("testdata", "calib", "prose.txt")

// TestPPLForgeTiny: forge-tiny's perplexity on 24 windows of 64 tokens
// sampled from prose.txt (all 249 take minutes on a busy 2-core machine)
// equals exp of the mean NLL computed here independently: the same windows
// (corpus.Load, which PPL documents using), each run from a fresh state with
// model.Forward, −log p(next) = −log(e^{z_y} / Σ e^{z}) in float64 summed
// over positions 0…62 of every window. Only the float64 summation order
// differs from PPL's, so they agree to 1e-9 relative.
func TestPPLForgeTiny(t *testing.T) {
	const ctxLen = 64
	var calls int
	const rows, seed = 24, 3
	rep, err := forge.PPL(context.Background(), forge.PPLConfig{Model: tinyDir, Data: pplData + ":24", Ctx: ctxLen, Seed: seed,
		Progress: func(done, total int64) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.PPL > 1) || math.IsInf(rep.PPL, 0) || math.IsNaN(rep.PPL) {
		t.Fatalf("ppl %v", rep.PPL)
	}
	if rep.Windows != rows || rep.Scored != rep.Windows*(ctxLen-1) || calls != rep.Windows || rep.TokensPerSec <= 0 {
		t.Errorf("report %+v, %d progress calls", rep, calls)
	}

	tok, err := tokenizer.Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := corpus.Load([]corpus.Spec{{Path: pplData, Rows: rows}}, tok, corpus.Options{Seq: ctxLen, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	var n int
	for _, row := range set.Rows {
		lg := m.Forward(m.NewState(), row)
		for p := 0; p+1 < len(row); p++ {
			z := lg.Row(p)
			var den float64
			for _, v := range z {
				den += math.Exp(float64(v))
			}
			sum -= math.Log(math.Exp(float64(z[row[p+1]])) / den)
			n++
		}
	}
	want := math.Exp(sum / float64(n))
	t.Logf("%d windows, %d tokens scored, mean NLL %.4f, ppl %.4f (independent %.4f), %.0f tokens/s",
		rep.Windows, rep.Scored, rep.MeanNLL, rep.PPL, want, rep.TokensPerSec)
	if n != rep.Scored || len(set.Rows) != rep.Windows {
		t.Errorf("scored %d in %d windows, want %d in %d", rep.Scored, rep.Windows, n, len(set.Rows))
	}
	if math.Abs(rep.PPL-want) > 1e-9*want {
		t.Errorf("ppl %.12g, independent %.12g", rep.PPL, want)
	}
}

// TestPPLErrors: a text too short for one window, a window of one token
// and a missing file are errors that say so.
func TestPPLErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("Too short for a window.\n"), 0o644)
	cases := []struct {
		name string
		cfg  forge.PPLConfig
		want string
		is   error
	}{
		{"too short", forge.PPLConfig{Model: tinyDir, Data: short, Ctx: 64}, "too short", corpus.ErrTooFewRows},
		{"ctx 1", forge.PPLConfig{Model: tinyDir, Data: pplData, Ctx: 1}, "windows of 1 tokens", nil},
		{"missing file", forge.PPLConfig{Model: tinyDir, Data: filepath.Join(dir, "none.txt")}, "none.txt", nil},
		{"bad extension", forge.PPLConfig{Model: tinyDir, Data: filepath.Join(dir, "data.csv")}, "data.csv", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := forge.PPL(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v does not wrap %v", err, c.is)
			}
		})
	}
}
