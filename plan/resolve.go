package plan

import (
	"fmt"
	"strconv"

	"forge/model"
)

// key is the plan key of name n (a TensorSpec key) for a matrix of layer
// li: "23.gate", or the bare name outside the layers ("head").
func key(li int, n string) string {
	if li < 0 {
		return n
	}
	return strconv.Itoa(li) + "." + n
}

// Resolve returns the spec the plan assigns to the checkpoint matrix name
// (most specific entry first: matrix keys, then the part default, then
// "default") and whether any entry applies. A nil Plan assigns nothing.
func (p *Plan) Resolve(name string) (Spec, bool) {
	t, ok := model.Lookup(name)
	if !ok || p == nil || !t.Quantizable {
		return Spec{}, false
	}
	for _, n := range t.Keys {
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

// Check reports a matrix key that selects none of names (the model's
// checkpoint tensor names): a plan written for another model, or a typo.
func (p *Plan) Check(names []string) error {
	if p == nil {
		return nil
	}
	used := map[string]bool{}
	for _, name := range names {
		if t, ok := model.Lookup(name); ok && t.Quantizable {
			for _, n := range t.Keys {
				used[key(t.Layer, n)] = true
			}
		}
	}
	for k := range p.Matrices {
		if !used[k] {
			return fmt.Errorf("%w: matrix key %q selects no matrix of this model", ErrPlan, k)
		}
	}
	return nil
}
