package plan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The reference's flat plan (docs/reference-pipeline.md §1.1) is one JSON
// object of "<layer>.<name>" keys:
//
//	{"23.gate": "LUT4 per-tensor + pcs", "5.mixer": "vector 2x16 + pcs",
//	 "7.down": "bf16", "3.basis": "online"}
//
// gate, up and down are the same matrix keys as forge's; "<i>.mixer" is
// the layer's mixer projections except attention k/v (forge's
// "<i>.mixer-kv": qkv/z/out on a DeltaNet layer, q/o on an attention
// layer; the reference keeps k/v at its KV format whatever the mixer's);
// "<i>.basis" is "online" (the layer's MLP inputs Hadamard-rotated) or
// "plain" (Plan.Basis). The reference's environment defaults (FORMAT,
// MIXER, KV_FMT, HEAD) are not in its plans: give them as forge's
// "default" and "parts" beside the flat keys, or as quantize's format.

// flatNames are the names a flat key may use.
var flatNames = []string{"gate", "up", "down", "mixer", "basis"}

// isFlatKey reports whether k looks like a flat plan key: digits, a dot,
// a name.
func isFlatKey(k string) bool {
	num, _, ok := strings.Cut(k, ".")
	return ok && num != "" && strings.Trim(num, "0123456789") == ""
}

// hasFlatKey reports whether the top-level object of a plan file has a
// flat key.
func hasFlatKey(top map[string]json.RawMessage) bool {
	for k := range top {
		if isFlatKey(k) {
			return true
		}
	}
	return false
}

// parseFlat reads a flat plan: flat keys, and optionally forge's
// "default" and "parts" (the reference's environment defaults). Any other
// key is an error: "matrices" or "basis" beside flat keys would be two
// spellings of one thing.
func parseFlat(top map[string]json.RawMessage) (*Plan, error) {
	var f fileJSON
	for k, v := range top {
		switch {
		case isFlatKey(k):
			continue
		case k == "default":
			f.Default = v
		case k == "parts":
			if err := json.Unmarshal(v, &f.Parts); err != nil {
				return nil, fmt.Errorf("%w: parts: want an object of part formats: %v", ErrPlan, err)
			}
		default:
			return nil, fmt.Errorf("%w: key %q in a flat (reference) plan: beside \"<layer>.<name>\" keys only \"default\" and \"parts\" may appear", ErrPlan, k)
		}
	}
	p, err := f.plan()
	if err != nil {
		return nil, err
	}
	for k, v := range top {
		if !isFlatKey(k) {
			continue
		}
		if err := p.addFlat(k, v); err != nil {
			return nil, fmt.Errorf("%w: flat plan key %q: %v", ErrPlan, k, err)
		}
	}
	return p, nil
}

// addFlat adds one flat key's setting to p.
func (p *Plan) addFlat(k string, v json.RawMessage) error {
	num, name, _ := strings.Cut(k, ".")
	li, err := strconv.Atoi(num)
	if err != nil || strconv.Itoa(li) != num {
		return fmt.Errorf("want \"<layer>.<name>\" with a layer number such as 23")
	}
	switch name {
	case "gate", "up", "down", "mixer":
		s, err := parseSpec(v)
		if err != nil {
			return err
		}
		if name == "mixer" {
			name = MixerKV
		}
		p.Matrices[key(li, name)] = s
	case "basis":
		var b string
		if err := json.Unmarshal(v, &b); err != nil {
			return fmt.Errorf("want \"online\" or \"plain\"")
		}
		if p.Basis[li], err = parseBasis(b); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown name %q (a flat plan names %s)", name, strings.Join(flatNames, ", "))
	}
	return nil
}
