package plan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"forge/model"
)

// modelNames lists the checkpoint tensor names of c.
func modelNames(c *model.Config) []string {
	var names []string
	for _, t := range model.Tensors(c) {
		names = append(names, t.Name)
	}
	return names
}

// TestSolutionPlanRoundTrip: a solution's plan, written and read back,
// resolves every matrix of every unit to the unit's chosen candidate and
// keeps the prediction and the sweep record.
func TestSolutionPlanRoundTrip(t *testing.T) {
	c := smallConfig(8)
	units, err := Units(c, "part", true)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := ParseCandidates("vector 2x16 + pcs; LUT4 per-tensor + pcs; LUT4 per-tensor + pcs, rank 8; bf16")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sweep{Version: SweepVersion, Model: SweepSource{Path: "m", Fingerprint: "abc"}, Trace: SweepTrace{Path: "t", SHA256: "def"},
		UnitKind: "part", Candidates: cands, Units: units, FixedBytes: 4096, Base: SweepBase{KL: 0.002}}
	for i, u := range units {
		for j, cd := range cands {
			b, err := u.Bytes(cd)
			if err != nil {
				t.Fatal(err)
			}
			s.Measurements = append(s.Measurements, Measurement{Unit: u.Key, Candidate: cd, Bytes: b,
				DKL: []float64{0.1, 0.03, 0.01, 0}[j] * float64(1+i%3), SE: 0.001, P99: 1 / float64(j+1)})
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	budget, _ := ParseBudget("7bpw")
	sol, err := Solve(s, SolveOptions{Budget: budget, Path: "sweep.json"})
	if err != nil {
		t.Fatal(err)
	}
	chosen := map[Candidate]bool{}
	for _, ch := range sol.Units {
		chosen[ch.Candidate] = true
	}
	if len(chosen) < 3 || !chosen[cands[2]] {
		t.Fatalf("the test wants a mixed plan with a low-rank candidate; the units got %v", chosen)
	}
	raw, err := sol.Plan().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if err := p.Check(modelNames(c)); err != nil {
		t.Error(err)
	}
	n := 0
	for i, u := range units {
		want, _ := sol.Units[i].Candidate.Spec()
		for _, name := range u.Names {
			got, ok := p.Resolve(name)
			if !ok || got != want {
				t.Errorf("%s (unit %s): %v rank %d (ok %v), want %v rank %d", name, u.Key, got.Format, got.Rank, ok, want.Format, want.Rank)
			}
			n++
		}
	}
	if n != len(p.Matrices) || n != 6*3+2*4+8*3+1 {
		t.Errorf("%d matrices resolved, the plan has %d keys", n, len(p.Matrices))
	}
	if p.Prediction == nil || *p.Prediction != sol.Prediction {
		t.Errorf("prediction %+v, want %+v", p.Prediction, sol.Prediction)
	}
	if p.Sweep == nil || p.Sweep.ModelFingerprint != "abc" || p.Sweep.TraceSHA256 != "def" || p.Sweep.UnitKind != "part" ||
		p.Sweep.Objective != "mean" || p.Sweep.Budget != "7bpw" || !strings.HasSuffix(p.Sweep.Path, "sweep.json") {
		t.Errorf("sweep record %+v", p.Sweep)
	}
	if err := p.CheckModel("abc"); err != nil {
		t.Error(err)
	}
	if err := p.CheckModel("xyz"); err == nil || !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "abc") || !strings.Contains(err.Error(), "xyz") {
		t.Errorf("another model's fingerprint: %v", err)
	}
	again, _ := p.Marshal()
	if string(again) != string(raw) {
		t.Errorf("written twice, the plan differs:\n%s\n%s", raw, again)
	}
	if strings.Index(string(raw), `"2.gate"`) > strings.Index(string(raw), `"10.gate"`) && strings.Contains(string(raw), `"10.gate"`) ||
		strings.Index(string(raw), `"head"`) < strings.Index(string(raw), `"7.down"`) {
		t.Errorf("matrix keys out of layer order:\n%s", raw)
	}
}

// deployedPlan is a flat plan shaped like the reference's deployed
// mix25in_mixr.json (docs/reference-pipeline.md §1.1): 192 MLP keys, LUT4
// in the listed layers and vector 2x16 in the others (9.down bf16), and vector 2x16
// mixers in layers 0–23; here with forge's "parts" for the reference's
// environment defaults (MIXER LUT4, KV_FMT INT8, HEAD LUT4) and a few
// basis keys.
func deployedPlan() string {
	lut4 := []int{23, 24, 25, 27, 28, 30, 32, 35, 36, 37, 39, 40, 41, 42, 44, 45, 49, 51, 53, 54, 55, 58, 60, 61, 62, 63}
	var kv []string
	for i := range 64 {
		f := "vector 2x16 + pcs"
		if slices.Contains(lut4, i) {
			f = "LUT4 per-tensor + pcs"
		}
		for _, m := range []string{"gate", "up", "down"} {
			if i == 9 && m == "down" {
				f = "bf16"
			}
			kv = append(kv, fmt.Sprintf("%q: %q", fmt.Sprintf("%d.%s", i, m), f))
		}
		if i < 24 {
			kv = append(kv, fmt.Sprintf(`"%d.mixer": "vector 2x16 + pcs"`, i))
		}
	}
	kv = append(kv, `"5.basis": "plain"`, `"6.basis": "online"`,
		`"parts": {"gdn": "LUT4 per-tensor + pcs", "attn": "LUT4 per-tensor + pcs", "kv": "INT8 per-channel", "head": "LUT4 per-tensor + pcs"}`)
	return "{" + strings.Join(kv, ",\n") + "}"
}

// TestFlatPlan: the reference's flat keys resolve as the reference used
// them: "<i>.mixer" covers qkv/z/out or q/o but never attention k/v,
// "<i>.basis" overrides the recipe's Hadamard switch for that layer.
func TestFlatPlan(t *testing.T) {
	p, err := Parse([]byte(deployedPlan()))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Matrices) != 192+24 || len(p.Basis) != 2 {
		t.Fatalf("%d matrix keys, %d basis keys", len(p.Matrices), len(p.Basis))
	}
	c := smallConfig(64)
	if err := p.Check(modelNames(c)); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, format string }{
		{"layers.0.mlp.gate_proj.weight", "vector 2x16 + pcs"},
		{"layers.23.mlp.up_proj.weight", "LUT4 per-tensor + pcs"},
		{"layers.9.mlp.down_proj.weight", "bf16"},
		{"layers.0.linear_attn.in_proj_qkv.weight", "vector 2x16 + pcs"},
		{"layers.1.linear_attn.in_proj_z.weight", "vector 2x16 + pcs"},
		{"layers.2.linear_attn.out_proj.weight", "vector 2x16 + pcs"},
		{"layers.23.self_attn.q_proj.weight", "vector 2x16 + pcs"}, // attention (23 % 4 == 3): q and o follow the mixer key
		{"layers.23.self_attn.o_proj.weight", "vector 2x16 + pcs"},
		{"layers.23.self_attn.k_proj.weight", "INT8 per-channel"}, // … k and v keep the kv format
		{"layers.23.self_attn.v_proj.weight", "INT8 per-channel"},
		{"layers.24.linear_attn.in_proj_qkv.weight", "LUT4 per-tensor + pcs"}, // no key: the gdn part (the reference's MIXER)
		{"layers.27.self_attn.q_proj.weight", "LUT4 per-tensor + pcs"},
		{"lm_head.weight", "LUT4 per-tensor + pcs"},
	}
	for _, cs := range cases {
		s, ok := p.Resolve(cs.name)
		if !ok || s.Format.String() != cs.format || s.Rank != 0 {
			t.Errorf("%s: %v (ok %v), want %s", cs.name, s.Format, ok, cs.format)
		}
	}
	rot := func(r Recipe, name string) (uint64, bool) {
		ts, _ := model.Lookup(name)
		return r.Rotation(ts)
	}
	for _, hadamard := range []bool{true, false} {
		r := Recipe{Plan: p, Hadamard: hadamard}
		if _, ok := rot(r, "layers.5.mlp.gate_proj.weight"); ok {
			t.Errorf("hadamard %v: layer 5 is plain, but its gate is rotated", hadamard)
		}
		if seed, ok := rot(r, "layers.6.mlp.down_proj.weight"); !ok || seed != 2006 {
			t.Errorf("hadamard %v: layer 6 is online, its down got seed %d (ok %v)", hadamard, seed, ok)
		}
		if _, ok := rot(r, "layers.7.mlp.up_proj.weight"); ok != hadamard {
			t.Errorf("hadamard %v: layer 7 (no basis key) rotated %v", hadamard, ok)
		}
		if _, ok := rot(r, "layers.6.linear_attn.in_proj_qkv.weight"); ok {
			t.Errorf("hadamard %v: a mixer input is rotated", hadamard)
		}
	}
	// Written in forge's form and read back: the same plan.
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip changed the plan:\n%s", raw)
	}
	if !strings.Contains(string(raw), `"0.mixer-kv": "vector 2x16 + pcs"`) || !strings.Contains(string(raw), `"5": "plain"`) {
		t.Errorf("forge's form of the mixer and basis keys:\n%s", raw)
	}
	// On a model with fewer layers, the keys of the missing ones are errors.
	if err := p.Check(modelNames(smallConfig(32))); err == nil || !strings.Contains(err.Error(), "selects no matrix") {
		t.Errorf("a 64-layer plan on 32 layers: %v", err)
	}
	b, _ := Parse([]byte(`{"40.basis": "plain"}`))
	if err := b.Check(modelNames(smallConfig(32))); err == nil || !strings.Contains(err.Error(), "basis of layer 40") {
		t.Errorf("a basis for a missing layer: %v", err)
	}
}

func TestFlatPlanErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"3.q": "bf16"}`, `unknown name "q"`},
		{`{"3.mlp": "bf16"}`, `unknown name "mlp"`},
		{`{"3.basis": "rotated"}`, `want "online" or "plain"`},
		{`{"3.basis": 1}`, `want "online" or "plain"`},
		{`{"03.gate": "bf16"}`, "layer number"},
		{`{"3.gate": "LUT5"}`, `"3.gate"`},
		{`{"3.mixer": {"format": "bf16", "rank": -2}}`, "negative"},
		{`{"3.gate": "bf16", "matrices": {"4.gate": "bf16"}}`, `only "default" and "parts"`},
		{`{"3.gate": "bf16", "sweep": {}}`, `only "default" and "parts"`},
		{`{"3.gate": "bf16", "parts": {"ffn": "bf16"}}`, "unknown part"},
		{`{"3.gate": "bf16", "parts": ["mlp"]}`, "parts"},
		{`{"basis": {"x": "plain"}}`, "layer number"},
		{`{"basis": {"3": "yes"}}`, "online"},
		{`{"matrices": {"3.mixer-kv": "bf16"}, "sweep": {"path": "s", "model": "x"}}`, "unknown field"},
		{`{"prediction": {"kl": "high"}}`, "invalid plan"},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want an ErrPlan mentioning %q", c.json, err, c.want)
		}
	}
}
