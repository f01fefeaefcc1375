package forge

import (
	"strings"
	"testing"
)

// TestRefitRecipe: a calibrated recipe (gptq, AW or a weighted
// correction) refits unless NoRefit; an uncalibrated one never does (the
// refit fits the calibration Hessian), and NoRefit leaves no refit in the
// recipe's record.
func TestRefitRecipe(t *testing.T) {
	cal := []string{"data/code-train-sample.txt:2"}
	cases := []struct {
		cfg  QuantizeConfig
		want bool
	}{
		{QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Calib: cal}, true},
		{QuantizeConfig{Format: "LUT4 + pcs", AW: true, Calib: cal}, true},
		{QuantizeConfig{Format: "LUT4 + pcs", LowRankRank: 4, LowRankWeighted: true, Calib: cal}, true},
		{QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", NoRefit: true, Calib: cal}, false},
		{QuantizeConfig{Format: "LUT4 + pcs"}, false},
	}
	for _, c := range cases {
		r, err := c.cfg.recipe()
		if err != nil {
			t.Fatal(err)
		}
		if r.Refit != c.want || c.cfg.refits() != c.want {
			t.Errorf("%+v: recipe refit %v, refits() %v, want %v", c.cfg, r.Refit, c.cfg.refits(), c.want)
		}
		rec, err := r.Record("fp", "v", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(rec); c.want != strings.Contains(got, `"refit":true`) {
			t.Errorf("%+v: record %s", c.cfg, got)
		}
	}
}
