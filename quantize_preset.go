package forge

import (
	"fmt"
	"slices"
	"strings"

	"forge/lut"
	"forge/model"
	"forge/plan"
	"forge/quant"
)

// Preset is a named recipe a user picks without knowing the recipe, like
// llama.cpp's type names (README "Presets"; BENCHMARKS.md "Presets"
// measures each on forge-tiny). Every preset is ANE-native (one codebook
// per tensor, per-channel scales), GPTQ with activation-weighted codebooks,
// the online Hadamard rotation of the MLP inputs and the closed-form
// refit, so it needs calibration data; the transformer blocks get Blocks
// and the head INT8 per-channel: the head is ~15% of forge-tiny's
// parameters and ~30% of its LUT4 KL (BENCHMARKS.md "head ablation"), and
// bits per weight are counted over the blocks' linear weights.
type Preset struct {
	Name   string
	Blocks lut.Format
	Head   lut.Format
}

// PresetCandidates are the formats a preset's planner chooses from
// (QuantizeConfig.Budget with Preset, unless SweepCandidates says
// otherwise): every ANE-native width from 2 to 8 bits.
const PresetCandidates = "vector 2x16 + pcs;LUT3 per-tensor + pcs;vector 2x64 + pcs;LUT4 per-tensor + pcs;LUT6 per-tensor + pcs;INT8 per-channel"

// Presets lists the presets by name.
var Presets = []Preset{
	{Name: "4bit", Blocks: lut.LUT4, Head: lut.INT8},
	{Name: "3bit", Blocks: lut.LUTFormat(3, 0), Head: lut.INT8},
	{Name: "2bit", Blocks: lut.Vec2x16, Head: lut.INT8},
}

// PresetNames is the presets' names, comma-separated.
func PresetNames() string {
	var n []string
	for _, p := range Presets {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// preset returns the preset cfg.Preset names after the checks both of
// its paths share: a known name, no method but gptq (rtn, the flag's
// default, is overridden), calibration data.
func (cfg QuantizeConfig) preset() (Preset, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == cfg.Preset })
	switch {
	case i < 0:
		return Preset{}, fmt.Errorf("%w: unknown preset %q (presets: %s)", plan.ErrRecipe, cfg.Preset, PresetNames())
	case cfg.Method != "" && cfg.Method != "gptq" && cfg.Method != "rtn":
		return Preset{}, fmt.Errorf("%w: preset %s uses the gptq method", plan.ErrRecipe, cfg.Preset)
	case len(cfg.Calib) == 0:
		return Preset{}, fmt.Errorf("%w: preset %s runs GPTQ with activation-weighted codebooks: give calibration data (--calib FILE:ROWS)", plan.ErrRecipe, cfg.Preset)
	}
	return Presets[i], nil
}

// presetBudget is cfg with the preset's recipe spelled out for the
// budgeted path (sweep → plan → quantize → gate): GPTQ, AW codebooks, the
// Hadamard rotation, and PresetCandidates unless candidates are given. The
// planner then picks every block matrix's format under the budget; the
// head, which the sweep does not measure, gets the preset's head format
// (INT8) in the plan and in the gate's uniform baseline, outside the
// budget.
func (cfg QuantizeConfig) presetBudget() (QuantizeConfig, error) {
	p, err := cfg.preset()
	if err != nil {
		return cfg, fmt.Errorf("quantize: %w", err)
	}
	cfg.Method, cfg.AW, cfg.Hadamard = "gptq", true, true
	cfg.presetHead = &p.Head
	if cfg.SweepCandidates == "" {
		cfg.SweepCandidates = PresetCandidates
	}
	cfg.Preset = ""
	return cfg, nil
}

// applyPreset sets the recipe of the preset cfg.Preset: its plan, method,
// activation weighting and rotation. A preset with a format or a plan of
// its own is refused, besides what preset refuses.
func (cfg QuantizeConfig) applyPreset(r *plan.Recipe) error {
	p, err := cfg.preset()
	if err != nil {
		return err
	}
	if cfg.Format != "" || cfg.Plan != "" {
		return fmt.Errorf("%w: preset %s sets the formats: give no format or plan with it", plan.ErrRecipe, p.Name)
	}
	r.Method, r.AW, r.Hadamard = quant.MethodGPTQ, true, true
	r.Plan = &plan.Plan{Default: &plan.Spec{Format: p.Blocks}, Parts: map[model.Part]plan.Spec{model.PartHead: {Format: p.Head}}}
	r.PlanPath = "preset " + p.Name
	return nil
}
