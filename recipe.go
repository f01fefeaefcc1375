package forge

import (
	"fmt"
	"slices"

	"forge/lut"
	"forge/model"
	"forge/plan"
)

// recipe is a validated QuantizeConfig: what each matrix becomes.
type recipe struct {
	cfg     QuantizeConfig
	def     *lut.Format // --format, if given
	plan    *plan.Plan
	lrParts map[model.Part]bool
}

// newRecipe checks cfg for conflicting or incomplete settings: each is an
// error naming the flags, never silently resolved (docs/quantization.md §8).
func newRecipe(cfg QuantizeConfig) (*recipe, error) {
	r := &recipe{cfg: cfg, lrParts: map[model.Part]bool{}}
	switch cfg.Method {
	case "", "rtn", "gptq":
	default:
		return nil, fmt.Errorf("quantize: method %q: want rtn or gptq", cfg.Method)
	}
	calib := len(cfg.Calib) > 0
	switch {
	case cfg.Method == "gptq" && !calib:
		return nil, fmt.Errorf("quantize: the gptq method needs calibration data")
	case cfg.AW && !calib:
		return nil, fmt.Errorf("quantize: activation-weighted codebooks are weighted by calibration statistics: give calibration data")
	case cfg.LowRankWeighted && !calib:
		return nil, fmt.Errorf("quantize: a Hessian-weighted low-rank correction needs calibration data")
	case cfg.LowRankWeighted && cfg.LowRankRank == 0:
		return nil, fmt.Errorf("quantize: a Hessian-weighted low-rank correction needs a low-rank rank")
	case len(cfg.LowRankParts) > 0 && cfg.LowRankRank == 0:
		return nil, fmt.Errorf("quantize: low-rank parts given without a low-rank rank")
	case cfg.LowRankRank < 0:
		return nil, fmt.Errorf("quantize: low-rank rank %d is negative", cfg.LowRankRank)
	case calib && cfg.Method != "gptq" && !cfg.AW && !cfg.LowRankWeighted:
		return nil, fmt.Errorf("quantize: calibration data is only used by the gptq method, activation-weighted codebooks or a weighted low-rank correction; none is asked for")
	case cfg.Seq < 0 || cfg.HoldOut < 0:
		return nil, fmt.Errorf("quantize: the calibration row length and held-out row count must not be negative")
	}
	if cfg.LowRankRank > 0 {
		parts := cfg.LowRankParts
		if len(parts) == 0 {
			parts = []string{"gdn", "attn", "kv"}
		}
		for _, name := range parts {
			p, ok := model.ParsePart(name)
			if !ok || !slices.Contains(model.QuantParts, p) {
				return nil, fmt.Errorf("quantize: low-rank parts: unknown part %q (parts: %s)", name, plan.QuantPartNames())
			}
			r.lrParts[p] = true
		}
	}
	if cfg.Format != "" {
		f, err := lut.ParseFormat(cfg.Format)
		if err != nil {
			return nil, fmt.Errorf("quantize: format: %w", err)
		}
		r.def = &f
	}
	if cfg.Plan != "" {
		p, err := plan.Read(cfg.Plan)
		if err != nil {
			return nil, fmt.Errorf("quantize: plan: %w", err)
		}
		if p.Default != nil && r.def != nil && p.Default.Format != *r.def {
			return nil, fmt.Errorf("quantize: the format %q conflicts with the default %q of plan %s", r.def, p.Default.Format, cfg.Plan)
		}
		r.plan = p
	}
	if r.def == nil && (r.plan == nil || r.plan.Default == nil) && cfg.Plan == "" {
		return nil, fmt.Errorf("quantize: give a format, or a plan")
	}
	return r, nil
}

// spec returns the format and low-rank rank of a quantizable matrix, and
// ok = false when neither --format nor the plan assigns it a format (it is
// then kept in its source dtype).
func (r *recipe) spec(name string) (plan.Spec, bool, error) {
	s, ok := r.plan.Resolve(name)
	if !ok && r.def != nil {
		s, ok = plan.Spec{Format: *r.def}, true
	}
	if !ok {
		return s, false, nil
	}
	t, _ := model.Lookup(name)
	if r.lrParts[t.Part] && s.Format.Quantized() {
		if s.Rank > 0 && s.Rank != r.cfg.LowRankRank {
			return s, false, fmt.Errorf("quantize: %s: plan rank %d conflicts with the low-rank rank %d", name, s.Rank, r.cfg.LowRankRank)
		}
		s.Rank = r.cfg.LowRankRank
	}
	return s, true, nil
}

// needsCalib reports whether the run collects calibration statistics.
func (r *recipe) needsCalib() bool {
	return r.cfg.Method == "gptq" || r.cfg.AW || r.cfg.LowRankWeighted
}

// rotationSeed returns the Hadamard seed of a matrix's input
// (docs/quantization.md §3: 1000 + layer before gate/up, 2000 + layer before
// down) and ok = false when it is not rotated.
func (r *recipe) rotationSeed(name string) (uint64, bool) {
	if !r.cfg.Hadamard {
		return 0, false
	}
	t, ok := model.Lookup(name)
	if !ok || t.Part != model.PartMLP {
		return 0, false
	}
	if t.Role == "down" {
		return uint64(2000 + t.Layer), true
	}
	return uint64(1000 + t.Layer), true
}
