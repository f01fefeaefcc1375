package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"forge/internal/units"
	"forge/lut"
	"forge/model"
	"forge/quant"
)

// ErrRecipe is wrapped by every conflicting or incomplete recipe.
var ErrRecipe = errors.New("invalid recipe")

// Recipe is what a quantize run does to each matrix of a model: a default
// format and/or a plan, the method, activation-weighted codebooks, the
// online Hadamard rotation of the MLP inputs, a low-rank correction of some
// parts, and the seed. Spec turns it into one quant.Spec per matrix.
type Recipe struct {
	Format   *lut.Format // default format of every quantizable matrix (nil: the plan's)
	Plan     *Plan       // per-part and per-matrix formats and ranks (nil: none)
	PlanPath string      // where Plan was read from, for the record
	Method   quant.Method
	AW       bool // codebooks weighted by diag(H)
	// Hadamard rotates the inputs of the MLP matrices online (seeds 1000 +
	// layer before gate/up, 2000 + layer before down; docs/quantization.md §3).
	Hadamard bool
	LowRank  LowRank
	// Refit refits each quantized matrix's codebooks and scales to its
	// calibration Hessian after the rounding, kept where the held-out SNR
	// rises (quant.Spec.Refit; it needs calibration data: Check).
	Refit bool
	// Reconstruct, if set, fits each layer's codebooks, scales and factors
	// to the reference model's stream once its matrices are quantized
	// (block reconstruction, package recon; it needs calibration data).
	Reconstruct *Reconstruct
	Seed        uint64 // codebooks: Seed + the matrix's index in the checkpoint; the low-rank fit: Seed
}

// Reconstruct are a recipe's block-reconstruction settings, as recorded
// (recon.Options; reference-pipeline.md §2).
type Reconstruct struct {
	Steps   int     `json:"steps"`    // Adam steps per layer
	Batch   int     `json:"batch"`    // calibration rows per step
	LRLUT   float64 `json:"lr_lut"`   // codebook learning rate
	LRScale float64 `json:"lr_scale"` // log-scale learning rate
	LRRank  float64 `json:"lr_rank"`  // low-rank factor learning rate
	// Rank > 0: the recipe's low-rank factors were added for the
	// reconstruction to train (--recon-rank), at this rank.
	Rank int `json:"rank,omitempty"`
	// Target is "stream" (the reference model's own hidden states: the
	// layer corrects the error it inherits) or "local" (the reference
	// layer applied to the quantized stream).
	Target string `json:"target"`
}

// check refuses settings that cannot run.
func (c *Reconstruct) check() error {
	switch {
	case c.Steps <= 0:
		return fmt.Errorf("reconstruction steps %d must be > 0", c.Steps)
	case c.Batch <= 0:
		return fmt.Errorf("reconstruction batch of %d rows must be > 0", c.Batch)
	case !(c.LRLUT > 0) || !(c.LRScale > 0) || !(c.LRRank > 0):
		return fmt.Errorf("reconstruction learning rates (codebook %v, scale %v, low-rank %v) must be > 0", c.LRLUT, c.LRScale, c.LRRank)
	case c.Target != "stream" && c.Target != "local":
		return fmt.Errorf("reconstruction target %q: want stream or local", c.Target)
	}
	return nil
}

// LowRank is a recipe's low-rank correction (docs/quantization.md §5).
type LowRank struct {
	Rank     int          // 0: none
	Parts    []model.Part // nil: DefaultLowRankParts
	Weighted bool         // fit weighted by the calibration Hessian
}

// DefaultLowRankParts get the correction when a recipe names no parts: the
// mixers, whose quantization error is low-rank (seed research notes §5).
var DefaultLowRankParts = []model.Part{model.PartGDN, model.PartAttn, model.PartKV}

// Check refuses a recipe whose settings conflict or are incomplete, given
// whether calibration data is supplied: each is an error, never silently
// resolved (docs/quantization.md §8).
func (r *Recipe) Check(calibrated bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRecipe, fmt.Sprintf(format, args...))
	}
	lr := r.LowRank
	switch {
	case r.Method == quant.MethodGPTQ && !calibrated:
		return bad("the gptq method needs calibration data")
	case r.AW && !calibrated:
		return bad("activation-weighted codebooks are weighted by calibration statistics: give calibration data")
	case r.Reconstruct != nil && !calibrated:
		return bad("block reconstruction fits the layers to the reference model on calibration rows: give calibration data")
	case r.Refit && !calibrated:
		return bad("the codebook refit fits the calibration Hessian: give calibration data (or turn the refit off)")
	case lr.Weighted && !calibrated:
		return bad("a Hessian-weighted low-rank correction needs calibration data")
	case lr.Weighted && lr.Rank == 0:
		return bad("a Hessian-weighted low-rank correction needs a low-rank rank")
	case len(lr.Parts) > 0 && lr.Rank == 0:
		return bad("low-rank parts given without a low-rank rank")
	case lr.Rank < 0:
		return bad("low-rank rank %d is negative", lr.Rank)
	case calibrated && !r.NeedsCalib():
		return bad("calibration data is only used by the gptq method, activation-weighted codebooks, a weighted low-rank correction or block reconstruction; none is asked for")
	case r.Format == nil && r.Plan == nil:
		return bad("give a format, or a plan")
	case r.Format != nil && r.Plan != nil && r.Plan.Default != nil && r.Plan.Default.Format != *r.Format:
		return bad("the format %q conflicts with the default %q of plan %s", r.Format, r.Plan.Default.Format, r.PlanPath)
	}
	for _, p := range lr.Parts {
		if !slices.Contains(model.QuantParts, p) {
			return bad("low-rank parts: unknown part %q (parts: %s)", p, QuantPartNames())
		}
	}
	if r.Reconstruct != nil {
		if err := r.Reconstruct.check(); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// NeedsCalib reports whether the recipe uses calibration statistics.
func (r *Recipe) NeedsCalib() bool {
	return r.Method == quant.MethodGPTQ || r.AW || r.LowRank.Weighted || r.Reconstruct != nil
}

// lowRankParts are the parts that get the correction.
func (r *Recipe) lowRankParts() []model.Part {
	if len(r.LowRank.Parts) == 0 {
		return DefaultLowRankParts
	}
	return r.LowRank.Parts
}

// Rotation returns the Hadamard seed of a matrix's input, and ok = false
// when it is not rotated: only MLP inputs are, in the layers where the
// plan's basis says "online" (Plan.Basis) or, where it says nothing,
// when Hadamard is set.
func (r *Recipe) Rotation(t model.TensorSpec) (uint64, bool) {
	if t.Part != model.PartMLP {
		return 0, false
	}
	on := r.Hadamard
	if b, ok := r.Plan.basis(t.Layer); ok {
		on = b
	}
	if !on {
		return 0, false
	}
	if t.Role == "down" {
		return uint64(2000 + t.Layer), true
	}
	return uint64(1000 + t.Layer), true
}

// Spec returns the quant.Spec of the quantizable matrix t, the index-th
// tensor of the checkpoint, and ok = false when neither the default format
// nor the plan assigns it a format (it is then kept in its source dtype).
// A rank the plan gives that conflicts with the recipe's, a format that
// cannot hold the shape, or a rank above the smaller side is an error.
func (r *Recipe) Spec(t model.TensorSpec, index int) (quant.Spec, bool, error) {
	ps, ok := r.Plan.Resolve(t.Name)
	if !ok && r.Format != nil {
		ps, ok = Spec{Format: *r.Format}, true
	}
	if !ok || !t.Quantizable {
		return quant.Spec{}, false, nil
	}
	if slices.Contains(r.lowRankParts(), t.Part) && r.LowRank.Rank > 0 && ps.Format.Quantized() {
		if ps.Rank > 0 && ps.Rank != r.LowRank.Rank {
			return quant.Spec{}, false, fmt.Errorf("%w: %s: plan rank %d conflicts with the low-rank rank %d", ErrRecipe, t.Name, ps.Rank, r.LowRank.Rank)
		}
		ps.Rank = r.LowRank.Rank
	}
	if err := ps.Format.CheckShape(t.Shape[0], t.Shape[1]); err != nil {
		return quant.Spec{}, false, fmt.Errorf("%s cannot hold %s %v: %w", ps.Format, t.Name, t.Shape, err)
	}
	if most := min(t.Shape[0], t.Shape[1]); ps.Rank > most {
		return quant.Spec{}, false, fmt.Errorf("%s %v: a low-rank correction of rank %d exceeds its smaller side %d", t.Name, t.Shape, ps.Rank, most)
	}
	s := quant.Spec{Format: ps.Format, Method: r.Method, AW: r.AW, Rank: ps.Rank, Weighted: r.LowRank.Weighted,
		Refit: r.Refit, Seed: r.Seed + uint64(index), LowRankSeed: r.Seed}
	if seed, ok := r.Rotation(t); ok {
		s.Rotation = &seed
	}
	return s, true, nil
}

// Record is the recipe as JSON for a bundle's manifest and a work
// directory's identity: the source checkpoint's fingerprint, the settings,
// and (when calibrated) the calibration data's recipe and held-out rows.
func (r *Recipe) Record(source, version string, calibration any, heldOut int) ([]byte, error) {
	format := ""
	if r.Format != nil {
		format = r.Format.String()
	}
	rec := map[string]any{
		"source": source, "format": format, "method": r.Method.String(), "aw": r.AW, "hadamard": r.Hadamard,
		"seed": r.Seed, "forge_version": version,
	}
	if r.Refit {
		rec["refit"] = true // absent in the records of bundles made before the refit existed
	}
	if r.Reconstruct != nil {
		rec["reconstruct"] = r.Reconstruct
	}
	if r.Plan != nil {
		rec["plan"] = map[string]any{"path": r.PlanPath, "plan": r.Plan}
	}
	if lr := r.LowRank; lr.Rank > 0 {
		var parts []string
		for _, p := range r.lowRankParts() {
			parts = append(parts, string(p))
		}
		slices.Sort(parts)
		rec["lowrank"] = map[string]any{"rank": lr.Rank, "parts": parts, "weighted": lr.Weighted}
	}
	if r.Hadamard || r.Plan != nil && slices.Contains(slices.Collect(maps.Values(r.Plan.Basis)), true) {
		rot := map[string]any{"kind": "hadamard", "seeds": "1000+layer before gate/up, 2000+layer before down",
			"block": "1024 or the largest power of two dividing the width"}
		if r.Plan != nil && len(r.Plan.Basis) > 0 {
			rot["layers"] = "the plan's basis per layer; others " + map[bool]string{true: "rotated", false: "not rotated"}[r.Hadamard]
		}
		rec["rotation"] = rot
	}
	if calibration != nil {
		rec["calibration"] = map[string]any{"recipe": calibration, "held_out_rows": heldOut}
	}
	return json.Marshal(rec)
}

// LowRankCost says, per part, what the low-rank corrections of specs (by
// matrix name) add to the stored size of its matrices (they can double a
// mixer at rank 32).
func LowRankCost(specs map[string]quant.Spec, shapes map[string][2]int) []string {
	type cost struct{ without, with int64 }
	by := map[model.Part]*cost{}
	for name, s := range specs {
		if s.Rank == 0 {
			continue
		}
		t, _ := model.Lookup(name)
		c := by[t.Part]
		if c == nil {
			c = &cost{}
			by[t.Part] = c
		}
		sh := shapes[name]
		c.without += s.Format.Size(sh[0], sh[1], 0).Total()
		c.with += s.Format.Size(sh[0], sh[1], s.Rank).Total()
	}
	var out []string
	for _, p := range model.Parts {
		if c := by[p]; c != nil {
			out = append(out, fmt.Sprintf("low-rank correction: %s matrices %s → %s (+%.0f%%)", p,
				units.Bytes(c.without), units.Bytes(c.with), 100*float64(c.with-c.without)/float64(max(c.without, 1))))
		}
	}
	return out
}
