package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/plan"
)

// writeTinySweep writes a whole sweep of forge-tiny's parts (head
// included) in three candidates (scalar LUTs, which quantize fast), with made-up ΔKL values that fall with
// the candidate's size and differ between units, recorded as measured on
// the model with fingerprint fp (shard: a slice of the work).
func writeTinySweep(t *testing.T, path, fp string, shard *plan.Shard) *plan.Sweep {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(tiny, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := checkpoint.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	us, err := plan.Units(&cfg, "part", true)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := plan.ParseCandidates("LUT2 per-tensor + pcs; LUT4 per-tensor + pcs; bf16")
	if err != nil {
		t.Fatal(err)
	}
	s := &plan.Sweep{Version: plan.SweepVersion, Model: plan.SweepSource{Path: tiny, Fingerprint: fp},
		Trace:    plan.SweepTrace{Path: "ref.trace", SHA256: strings.Repeat("ab", 32), Rows: 4, Positions: 1000},
		UnitKind: "part", Candidates: cands, Units: us, FixedBytes: 2 << 20, Base: plan.SweepBase{KL: 0.001, Top1: 1},
		Recipe: plan.RawJSON(`{"method":"rtn"}`), Shard: shard}
	for i, u := range us {
		for j, c := range cands {
			if shard != nil && !shard.Owns(i*len(cands)+j) {
				continue
			}
			b, err := u.Bytes(c)
			if err != nil {
				t.Fatal(err)
			}
			dkl := []float64{0.04, 0.004, 0}[j] * float64(1+i%5)
			s.Measurements = append(s.Measurements, plan.Measurement{Unit: u.Key, Candidate: c, Bytes: b,
				DKL: dkl, SE: dkl / 10, P99: 10 * dkl, Top1: 1 - dkl})
		}
	}
	if err := plan.WriteSweep(path, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func tinyFingerprint(t *testing.T) string {
	t.Helper()
	ck, err := checkpoint.Open(tiny)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	fp, err := ck.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestPlanCLI: forge plan on a sweep of forge-tiny writes a plan that
// forge quantize takes, prints the table and summary, writes the report,
// and replaces its own plan only with --overwrite.
func TestPlanCLI(t *testing.T) {
	dir := t.TempDir()
	sweep := filepath.Join(dir, "sweep.json")
	s := writeTinySweep(t, sweep, tinyFingerprint(t), nil)
	out, rep := filepath.Join(dir, "plan.json"), filepath.Join(dir, "report.json")
	args := []string{"plan", "--sweep", sweep, "--budget", "3bpw", "--out", out, "--json", rep}
	text, err := run(t, args...)
	if err != nil {
		t.Fatal(err, text)
	}
	for _, want := range []string{"0.mlp", "3.attn", "3.kv", "head", "LUT2 per-tensor + pcs", "LUT4 per-tensor + pcs", "predicted KL",
		"bpw", "no plan within the budget is below", "every unit at one candidate", "wrote " + out, "wrote " + rep} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	p, err := plan.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sweep == nil || p.Prediction == nil || p.Prediction.BPW > 3 || p.Sweep.Budget != "3bpw" || p.Sweep.Objective != "mean" {
		t.Errorf("plan records %+v, %+v", p.Sweep, p.Prediction)
	}
	n := 0
	for _, u := range s.Units {
		n += len(u.Matrices)
	}
	if len(p.Matrices) != n {
		t.Errorf("%d matrix keys, the units hold %d matrices", len(p.Matrices), n)
	}
	var r struct {
		Version string  `json:"forge_version"`
		KL      float64 `json:"kl"`
		Units   []struct {
			Unit string `json:"unit"`
		} `json:"units"`
		Uniform []struct {
			Fits bool `json:"fits"`
		} `json:"uniform"`
	}
	raw, _ := os.ReadFile(rep)
	if err := json.Unmarshal(raw, &r); err != nil || r.Version == "" || r.KL != p.Prediction.KL || len(r.Units) != len(s.Units) || len(r.Uniform) != 3 {
		t.Errorf("report %+v (%v):\n%s", r, err, raw)
	}
	// The plan quantizes forge-tiny: every key selects a matrix of it.
	bundle := filepath.Join(dir, "b")
	if text, err := run(t, "quantize", "--model", tiny, "--plan", out, "--out", bundle); err != nil {
		t.Fatalf("quantize with the plan: %v\n%s", err, text)
	}
	// Its own plan is replaced only with --overwrite; a hand-written one never.
	if text, err := run(t, args...); err == nil || !strings.Contains(text, "--overwrite") {
		t.Errorf("second run without --overwrite: %v\n%s", err, text)
	}
	if text, err := run(t, append(args, "--overwrite", "--objective", "p99")...); err != nil || !strings.Contains(text, "objective p99") {
		t.Errorf("--overwrite: %v\n%s", err, text)
	}
	hand := filepath.Join(dir, "hand.json")
	os.WriteFile(hand, []byte(`{"default": "bf16"}`), 0o644)
	if text, err := run(t, "plan", "--sweep", sweep, "--budget", "3bpw", "--out", hand, "--overwrite"); err == nil || !strings.Contains(text, "not a file forge wrote") {
		t.Errorf("overwriting a hand-written plan: %v\n%s", err, text)
	}
	if b, _ := os.ReadFile(hand); string(b) != `{"default": "bf16"}` {
		t.Errorf("the hand-written plan was changed: %s", b)
	}
}

// TestPlanCLIErrors: a plan from another model's sweep, budgets out of
// bounds or malformed, a shard, and bad options are refused with a
// message that says what is wrong, and nothing is written.
func TestPlanCLIErrors(t *testing.T) {
	dir := t.TempDir()
	other := strings.Repeat("0", 64)
	foreign := filepath.Join(dir, "foreign.json")
	writeTinySweep(t, foreign, other, nil)
	fp := tinyFingerprint(t)
	own := filepath.Join(dir, "own.json")
	s := writeTinySweep(t, own, fp, nil)
	// The smallest plan: every unit at its smallest candidate, LUT2, plus
	// the fixed bytes, in MiB rounded up at three decimals.
	smallest := s.FixedBytes
	for _, m := range s.Measurements {
		if m.Candidate == s.Candidates[0] {
			smallest += m.Bytes
		}
	}
	needs := strconv.FormatFloat(math.Ceil(float64(smallest)/(1<<20)*1000)/1000, 'f', -1, 64) + "MiB"
	shard := filepath.Join(dir, "shard.json")
	writeTinySweep(t, shard, fp, &plan.Shard{I: 1, N: 3})
	out := filepath.Join(dir, "p.json")

	// A plan chosen on another model's sweep: forge plan writes it (it
	// cannot know), forge quantize refuses it naming both fingerprints.
	foreignPlan := filepath.Join(dir, "foreign-plan.json")
	if text, err := run(t, "plan", "--sweep", foreign, "--budget", "3bpw", "--out", foreignPlan); err != nil {
		t.Fatal(err, text)
	}
	text, err := run(t, "quantize", "--model", tiny, "--plan", foreignPlan, "--out", filepath.Join(dir, "b"))
	if err == nil || !strings.Contains(text, other) || !strings.Contains(text, fp) || !strings.Contains(text, "foreign-plan.json") {
		t.Errorf("quantize with another model's plan: %v\n%s", err, text)
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Error("quantize wrote a bundle")
	}

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"below the smallest plan", []string{"--sweep", own, "--budget", "1.5bpw"}, "1.5bpw is below the smallest plan"},
		{"below in a size", []string{"--sweep", own, "--budget", "2MiB"}, "2MiB is below the smallest plan: every unit at its smallest candidate needs " + needs},
		{"nothing to choose", []string{"--sweep", own, "--budget", "17bpw"}, "nothing to choose"},
		{"malformed budget", []string{"--sweep", own, "--budget", "2.6"}, "no unit"},
		{"zero budget", []string{"--sweep", own, "--budget", "0GiB"}, "not above zero"},
		{"NaN budget", []string{"--sweep", own, "--budget", "NaNbpw"}, "not a number"},
		{"shard", []string{"--sweep", shard, "--budget", "3bpw"}, "merge"},
		{"bad objective", []string{"--sweep", own, "--budget", "3bpw", "--objective", "max"}, "--objective"},
		{"bad resolution", []string{"--sweep", own, "--budget", "3bpw", "--resolution=-5"}, "--resolution -5"},
		{"fine resolution", []string{"--sweep", own, "--budget", "3bpw", "--resolution", "1"}, ""},
		{"missing sweep", []string{"--sweep", filepath.Join(dir, "none.json"), "--budget", "3bpw"}, "none.json"},
		{"not a sweep", []string{"--sweep", foreignPlan, "--budget", "3bpw"}, "invalid sweep"},
	}
	for _, c := range cases {
		text, err := run(t, append(append([]string{"plan"}, c.args...), "--out", out)...)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v\n%s", c.name, err, text)
			}
			os.Remove(out)
			continue
		}
		if err == nil || !strings.Contains(text, c.want) {
			t.Errorf("%s: %v, want a message with %q:\n%s", c.name, err, c.want, text)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a plan was written", c.name)
			os.Remove(out)
		}
	}
}

// TestPlanCLIPlots: forge plan --plots DIR creates DIR, draws the
// sensitivity and the Pareto front as PNG and SVG, lists them, replaces
// them only with --overwrite and never replaces a file forge did not
// write.
func TestPlanCLIPlots(t *testing.T) {
	dir := t.TempDir()
	sweep := filepath.Join(dir, "sweep.json")
	writeTinySweep(t, sweep, tinyFingerprint(t), nil)
	plots := filepath.Join(dir, "plots")
	args := []string{"plan", "--sweep", sweep, "--budget", "3bpw", "--out", filepath.Join(dir, "plan.json"), "--plots", plots}
	text, err := run(t, args...)
	if err != nil {
		t.Fatal(err, text)
	}
	for _, name := range []string{"sensitivity.png", "sensitivity.svg", "pareto.png", "pareto.svg"} {
		path := filepath.Join(plots, name)
		if !strings.Contains(text, "wrote "+path) {
			t.Errorf("output does not list %s:\n%s", path, text)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(name) == ".png" {
			cfg, err := png.DecodeConfig(bytes.NewReader(raw))
			if err != nil || cfg.Width < 1080 || cfg.Height != 660 {
				t.Errorf("%s: %+v, %v", path, cfg, err)
			}
			continue
		}
		if err := xml.Unmarshal(raw, new(struct{})); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		want := map[string][]string{"sensitivity.svg": {"mlp, LUT2 per-tensor + pcs", "kv, LUT4 per-tensor + pcs", "forge-tiny"},
			"pareto.svg": {"chosen under 3bpw", "every unit at one candidate", "bf16"}}[name]
		for _, w := range want {
			if !bytes.Contains(raw, []byte(w)) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
	}
	if text, err := run(t, args...); err == nil || !strings.Contains(text, "--overwrite") {
		t.Errorf("second run without --overwrite: %v\n%s", err, text)
	}
	if text, err := run(t, append(args, "--overwrite")...); err != nil {
		t.Errorf("--overwrite: %v\n%s", err, text)
	}
	// A file forge did not write at a plot's path is never replaced.
	foreign := filepath.Join(plots, "pareto.svg")
	os.WriteFile(foreign, []byte("my notes\n"), 0o644)
	if text, err := run(t, append(args, "--overwrite")...); err == nil || !strings.Contains(text, "not a file forge wrote") {
		t.Errorf("overwriting a foreign pareto.svg: %v\n%s", err, text)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "my notes\n" {
		t.Errorf("the foreign file was changed: %q", b)
	}
	// The plots directory is not the plan file.
	same := filepath.Join(dir, "same.json")
	if text, err := run(t, "plan", "--sweep", sweep, "--budget", "3bpw", "--out", same, "--plots", same); err == nil || !strings.Contains(text, "also a file of the job") {
		t.Errorf("--plots at the plan's path: %v\n%s", err, text)
	}
	if _, err := os.Stat(same); err == nil {
		t.Error("--plots at the plan's path wrote something")
	}
}

// TestPlanGate: forge plan --gate quantizes the plan and the best uniform
// candidate that fits in its bytes (LUT2 here), scores both on a
// held-out trace, prints predicted against measured KL, draws them with
// --plots, keeps the plan's bundle with --bundle, and passes (a plan
// with LUT4 in places beats LUT2 everywhere); --gate without its model
// and trace is refused.
func TestPlanGate(t *testing.T) {
	dir := t.TempDir()
	sweep := filepath.Join(dir, "sweep.json")
	writeTinySweep(t, sweep, tinyFingerprint(t), nil)
	tr := filepath.Join(dir, "held.trace")
	if out, err := run(t, "trace", "--model", tiny, "--data", filepath.Join("..", "..", "data", "prose-heldout.txt")+":2",
		"--ctx", "64", "--out", tr); err != nil {
		t.Fatal(err, out)
	}
	out, b, plots := filepath.Join(dir, "plan.json"), filepath.Join(dir, "b"), filepath.Join(dir, "plots")
	text, err := run(t, "plan", "--sweep", sweep, "--budget", "3bpw", "--out", out, "--gate", "--model", tiny,
		"--eval-trace", tr, "--bundle", b, "--plots", plots)
	if err != nil {
		t.Fatal(err, text)
	}
	for _, want := range []string{"measured KL", "LUT2 per-tensor + pcs", "gate passed", "wrote " + b, filepath.Join(plots, "gate.png")} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, f := range []string{filepath.Join(b, "forge.json"), filepath.Join(plots, "gate.svg")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if text, err := run(t, "plan", "--sweep", sweep, "--budget", "3bpw", "--out", filepath.Join(dir, "p2.json"), "--gate"); err == nil ||
		!strings.Contains(text, "--gate needs --model and --eval-trace") {
		t.Errorf("--gate alone: %v\n%s", err, text)
	}
}
