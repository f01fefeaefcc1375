package plan

import (
	"fmt"
	"slices"
	"strconv"

	"forge/model"
)

// MixerKV is the plan key name (LAYER.mixer-kv) of a layer's mixer
// projections less the attention k and v: a DeltaNet layer's qkv, z and
// out, an attention layer's q and o. It is what the reference's flat
// "LAYER.mixer" key means (its k/v always keep their own format), so a
// flat plan's mixer keys become mixer-kv keys (flat.go).
const MixerKV = "mixer-kv"

// key is the plan key of name n (a TensorSpec key) for a matrix of layer
// li: "23.gate", or the bare name outside the layers ("head").
func key(li int, n string) string {
	if li < 0 {
		return n
	}
	return strconv.Itoa(li) + "." + n
}

// planKeys lists every name a LAYER.NAME key may use: the tensor table's
// (model.PlanKeys) and mixer-kv.
func planKeys() []string { return append(model.PlanKeys(), MixerKV) }

// keysOf lists the plan key names that select t, most specific first:
// t.Keys with mixer-kv before "mixer" for the mixer projections other
// than k and v.
func keysOf(t model.TensorSpec) []string {
	if t.Part != model.PartGDN && t.Part != model.PartAttn {
		return t.Keys
	}
	i := slices.Index(t.Keys, "mixer")
	if i < 0 {
		return t.Keys
	}
	return slices.Concat(t.Keys[:i], []string{MixerKV}, t.Keys[i:])
}

// Resolve returns the spec the plan assigns to the checkpoint matrix name
// (most specific entry first: matrix keys, then the part default, then
// "default") and whether any entry applies. A nil Plan assigns nothing.
func (p *Plan) Resolve(name string) (Spec, bool) {
	t, ok := model.Lookup(name)
	if !ok || p == nil || !t.Quantizable {
		return Spec{}, false
	}
	for _, n := range keysOf(t) {
		if s, ok := p.Matrices[key(t.Layer, n)]; ok {
			return s, true
		}
	}
	if s, ok := p.Parts[t.Part]; ok {
		return s, true
	}
	if p.Default != nil {
		return *p.Default, true
	}
	return Spec{}, false
}

// basis returns the plan's MLP input basis of layer li (true: rotated)
// and whether the plan sets one. A nil Plan sets none.
func (p *Plan) basis(li int) (rotated, ok bool) {
	if p == nil {
		return false, false
	}
	rotated, ok = p.Basis[li]
	return rotated, ok
}

// Check reports a matrix key that selects none of names (the model's
// checkpoint tensor names) and a basis for a layer without MLP matrices
// among them: a plan written for another model, or a typo.
func (p *Plan) Check(names []string) error {
	if p == nil {
		return nil
	}
	used := map[string]bool{}
	mlp := map[int]bool{}
	for _, name := range names {
		if t, ok := model.Lookup(name); ok && t.Quantizable {
			for _, n := range keysOf(t) {
				used[key(t.Layer, n)] = true
			}
			if t.Part == model.PartMLP {
				mlp[t.Layer] = true
			}
		}
	}
	for k := range p.Matrices {
		if !used[k] {
			return fmt.Errorf("%w: matrix key %q selects no matrix of this model", ErrPlan, k)
		}
	}
	for li := range p.Basis {
		if !mlp[li] {
			return fmt.Errorf("%w: basis of layer %d: this model has no MLP matrices in layer %d", ErrPlan, li, li)
		}
	}
	return nil
}
