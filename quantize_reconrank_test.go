package forge

import (
	"strings"
	"testing"

	"forge/model"
)

// TestReconRankRecipe: --recon-rank R gives the low-rank parts (default
// gdn, attn, kv) rank-R factors for the reconstruction to train, recorded
// with the reconstruction's settings; it needs --reconstruct and replaces
// --lowrank-rank rather than adding to it.
func TestReconRankRecipe(t *testing.T) {
	cal := []string{"data/code-train-sample.txt:2"}
	cfg := QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Calib: cal, Reconstruct: true, ReconRank: 4}
	r, err := cfg.recipe()
	if err != nil {
		t.Fatal(err)
	}
	if r.LowRank.Rank != 4 || r.Reconstruct == nil || r.Reconstruct.Rank != 4 {
		t.Fatalf("low-rank %+v, reconstruct %+v", r.LowRank, r.Reconstruct)
	}
	for _, p := range []model.Part{model.PartGDN, model.PartAttn, model.PartKV} {
		spec := model.TensorSpec{Name: "x", Part: p, Quantizable: true, Matrix: true, Shape: []int{256, 256}}
		if s, ok, err := r.Spec(spec, 0); err != nil || !ok || s.Rank != 4 {
			t.Errorf("%s: spec %+v %v %v, want rank 4", p, s, ok, err)
		}
	}
	rec, err := r.Record("fp", "v", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"rank":4`) || !strings.Contains(string(rec), `"reconstruct":{`) {
		t.Errorf("record %s", rec)
	}
	for _, c := range []struct {
		cfg  QuantizeConfig
		want string
	}{
		{QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Calib: cal, ReconRank: 4}, "goes with block reconstruction"},
		{QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Calib: cal, Reconstruct: true, ReconRank: 4, LowRankRank: 8}, "give one of them"},
		{QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Calib: cal, Reconstruct: true, ReconRank: -1}, "negative"},
	} {
		if _, err := c.cfg.recipe(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
