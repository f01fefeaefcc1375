package forge_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"forge"
	"forge/plan"
)

// sweepTrace records a small trace of dir (rows × 64 tokens of held-out
// code) for the sweep tests.
func sweepTrace(t *testing.T, dir string, rows int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "t.trace")
	_, err := forge.Trace(context.Background(), forge.TraceConfig{Model: dir,
		Data: []string{filepath.Join("data", "code-heldout.txt") + ":" + strconv.Itoa(rows)}, Seq: 64, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSweepIsAnAblation: the sweep's ΔKL of the one unit that holds every
// layer, in LUT4, is the KL forge eval measures for the LUT4 bundle
// forge quantize makes with the same settings and the head kept (the
// same matrices, the same rows): the cached layer inputs, the swapped slots and the head
// give a whole forward.
func TestSweepIsAnAblation(t *testing.T) {
	tiny := filepath.Join("models", "forge-tiny")
	tr := sweepTrace(t, tiny, 3)
	dir := t.TempDir()
	s, err := forge.Sweep(context.Background(), forge.SweepConfig{Model: tiny, Trace: tr, Out: filepath.Join(dir, "s.json"),
		Candidates: "LUT4 + pcs;bf16;LUT4 + pcs, rank 16", Unit: "band:8", Rows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Measurements) != 3 || s.Base.KL != 0 || s.Base.Top1 != 1 {
		t.Fatalf("measurements %+v, base %+v (a full trace of the reference scores KL 0)", s.Measurements, s.Base)
	}
	if m := s.Measurements[1]; m.DKL != 0 || m.SE != 0 || m.Bytes != 2*s.Units[0].Params {
		t.Errorf("bf16 keeps the unit: %+v", m)
	}
	// A rank-16 correction stores 2·16·(out + in) fp16 more per matrix and
	// takes some of the error away.
	var lr int64
	for _, sh := range s.Units[0].Shapes {
		lr += 2 * 16 * int64(sh[0]+sh[1])
	}
	if m, l := s.Measurements[2], s.Measurements[0]; m.Bytes != l.Bytes+lr || !(m.DKL < l.DKL) {
		t.Errorf("rank 16: %d bytes, ΔKL %v; LUT4: %d bytes, ΔKL %v", m.Bytes, m.DKL, l.Bytes, l.DKL)
	}
	b, pl := filepath.Join(dir, "lut4"), filepath.Join(dir, "plan.json")
	if err := os.WriteFile(pl, []byte(`{"default": "LUT4 + pcs", "parts": {"head": "bf16"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: tiny, Out: b, Plan: pl}); err != nil {
		t.Fatal(err)
	}
	rep, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: tr, Model: b})
	if err != nil {
		t.Fatal(err)
	}
	// Equal but for the order of summation (row means, then rows).
	m := s.Measurements[0]
	if math.Abs(m.DKL-rep.MeanKL) > 1e-12*rep.MeanKL || m.DKL <= 0 {
		t.Errorf("sweep ΔKL %.15g, forge eval of the bundle %.15g", m.DKL, rep.MeanKL)
	}
	if math.Abs(m.Top1-rep.Top1) > 1e-12 || math.Abs(m.P99-rep.P99KL) > 1e-6*rep.P99KL {
		t.Errorf("top-1 %v / %v, p99 %v / %v", m.Top1, rep.Top1, m.P99, rep.P99KL)
	}
	if s.Units[0].Key != "0-7" || len(s.Units) != 1 {
		t.Errorf("units %v", s.Units)
	}
}

// TestSweepResume: a sweep cancelled after its first measurement keeps it
// in OUT.partial and, resumed, writes what an uninterrupted sweep writes.
func TestSweepResume(t *testing.T) {
	tiny := filepath.Join("models", "forge-tiny")
	tr := sweepTrace(t, tiny, 2)
	dir := t.TempDir()
	cfg := forge.SweepConfig{Model: tiny, Trace: tr, Candidates: "LUT4 + pcs;INT8", Unit: "band:4", Rows: 2}
	whole := cfg
	whole.Out = filepath.Join(dir, "whole.json")
	if _, err := forge.Sweep(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	cut := cfg
	cut.Out = filepath.Join(dir, "cut.json")
	ctx, cancel := context.WithCancel(context.Background())
	cut.Log = func(line string) { // cancelled after the first measurement
		if strings.Contains(line, "ΔKL") {
			cancel()
		}
	}
	var steps []int64
	cut.Progress = func(done, total int64) { steps = append(steps, done, total) }
	if _, err := forge.Sweep(ctx, cut); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sweep: %v", err)
	}
	if _, err := os.Stat(cut.Out); err == nil {
		t.Fatal("a cancelled sweep wrote its measurement file")
	}
	part, err := plan.ReadSweep(cut.Out + ".partial")
	if err != nil || len(part.Measurements) != 1 {
		t.Fatalf("partial: %v, %v", part, err)
	}
	// Progress counts the matrices made (2 candidates × 50 block
	// matrices) and then the measurements (2 units × 2 candidates).
	if want := []int64{1, 104}; len(steps) < 2 || steps[0] != want[0] || steps[1] != want[1] {
		t.Errorf("progress starts %v, want %v", steps[:min(2, len(steps))], want)
	}
	cut.Progress = nil
	cut.Resume = true
	var logged []string
	cut.Log = func(line string) { logged = append(logged, line) }
	if _, err := forge.Sweep(context.Background(), cut); err != nil {
		t.Fatal(err)
	}
	if n := len(logged); n != 3 { // the three measurements left, nothing quantized again
		t.Errorf("resumed sweep logged %d lines, want 3: %q", n, logged)
	}
	a, _ := os.ReadFile(whole.Out)
	b, _ := os.ReadFile(cut.Out)
	if string(a) != string(b) {
		t.Error("the resumed sweep's file differs from the uninterrupted one's")
	}
	for _, p := range []string{cut.Out + ".partial", cut.Out + ".c0.work", cut.Out + ".c1.work"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left behind", p)
		}
	}
}

func TestSweepBadInput(t *testing.T) {
	tiny := filepath.Join("models", "forge-tiny")
	tr := sweepTrace(t, tiny, 2)
	other := sweepTrace(t, filepath.Join("models", "forge-tiny-draft"), 2)
	dir := t.TempDir()
	out := filepath.Join(dir, "s.json")
	cases := []struct {
		name string
		edit func(c *forge.SweepConfig)
		want string
	}{
		{"trace of another model", func(c *forge.SweepConfig) { c.Trace = other }, "another model"},
		{"format that cannot hold a shape", func(c *forge.SweepConfig) { c.Candidates = "vector 3x16 + pcs" }, "cannot hold"},
		{"unknown unit", func(c *forge.SweepConfig) { c.Unit = "row" }, "unit"},
		{"one row", func(c *forge.SweepConfig) { c.Rows = 1 }, "at least 2"},
		{"bad candidate", func(c *forge.SweepConfig) { c.Candidates = "LUT4 + pcs, rank -3" }, "rank"},
		{"bad shard", func(c *forge.SweepConfig) { c.Shard = "3/3" }, "shard"},
		{"auto shard without an index", func(c *forge.SweepConfig) { c.Shard = "auto/4" }, "JOB_COMPLETION_INDEX"},
		{"gptq without calibration", func(c *forge.SweepConfig) { c.Method = "gptq" }, "calibration"},
		{"weighted correction without a rank", func(c *forge.SweepConfig) {
			c.LowRankWeighted, c.Calib = true, []string{filepath.Join("data", "code-train-sample.txt") + ":4"}
		}, "rank"},
	}
	// OUT.partial that forge did not write is never replaced.
	if err := os.WriteFile(filepath.Join(dir, "mine.json.partial"), []byte("my notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := forge.Sweep(context.Background(), forge.SweepConfig{Model: tiny, Trace: tr, Out: filepath.Join(dir, "mine.json"),
		Candidates: "LUT4 + pcs", Unit: "band:8", Rows: 2}); err == nil || !strings.Contains(err.Error(), "mine.json.partial") {
		t.Errorf("a user's OUT.partial: %v, want it refused by name", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mine.json.partial")); string(b) != "my notes" {
		t.Error("a user's OUT.partial was replaced")
	}
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	for _, c := range cases {
		cfg := forge.SweepConfig{Model: tiny, Trace: tr, Out: out, Candidates: "LUT4 + pcs", Unit: "band:8", Rows: 2}
		c.edit(&cfg)
		if _, err := forge.Sweep(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%s: a measurement file was written", c.name)
		}
	}
}
