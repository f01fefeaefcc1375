package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Target is how a plan sees one checkpoint matrix: its layer (−1 for the
// head), its part and the key names that select it, most specific first.
type Target struct {
	Layer int
	Part  string
	Names []string // e.g. {"k", "kv", "mixer"}
}

// TargetOf classifies a checkpoint tensor name ("layers.3.mlp.gate_proj.weight",
// "lm_head.weight"); ok is false for tensors no plan assigns (embeddings,
// norms, in_proj_a/b, …).
func TargetOf(name string) (Target, bool) {
	if name == "lm_head.weight" {
		return Target{Layer: -1, Part: "head", Names: []string{"head"}}, true
	}
	rest, ok := strings.CutPrefix(name, "layers.")
	if !ok {
		return Target{}, false
	}
	num, rest, _ := strings.Cut(rest, ".")
	li, err := strconv.Atoi(num)
	if err != nil {
		return Target{}, false
	}
	t := Target{Layer: li}
	switch rest {
	case "mlp.gate_proj.weight":
		t.Part, t.Names = "mlp", []string{"gate", "mlp"}
	case "mlp.up_proj.weight":
		t.Part, t.Names = "mlp", []string{"up", "mlp"}
	case "mlp.down_proj.weight":
		t.Part, t.Names = "mlp", []string{"down", "mlp"}
	case "linear_attn.in_proj_qkv.weight":
		t.Part, t.Names = "gdn", []string{"qkv", "mixer"}
	case "linear_attn.in_proj_z.weight":
		t.Part, t.Names = "gdn", []string{"z", "mixer"}
	case "linear_attn.out_proj.weight":
		t.Part, t.Names = "gdn", []string{"out", "mixer"}
	case "self_attn.q_proj.weight":
		t.Part, t.Names = "attn", []string{"q", "mixer"}
	case "self_attn.o_proj.weight":
		t.Part, t.Names = "attn", []string{"o", "mixer"}
	case "self_attn.k_proj.weight":
		t.Part, t.Names = "kv", []string{"k", "kv", "mixer"}
	case "self_attn.v_proj.weight":
		t.Part, t.Names = "kv", []string{"v", "kv", "mixer"}
	default:
		return Target{}, false
	}
	return t, true
}

// key is the matrix key of name n in t's layer.
func (t Target) key(n string) string {
	if t.Layer < 0 {
		return n
	}
	return strconv.Itoa(t.Layer) + "." + n
}

// Resolve returns the spec the plan assigns to the checkpoint matrix name
// (most specific entry first: matrix keys, then the part default, then
// "default") and whether any entry applies. A nil Plan assigns nothing.
func (p *Plan) Resolve(name string) (Spec, bool) {
	t, ok := TargetOf(name)
	if !ok || p == nil {
		return Spec{}, false
	}
	for _, n := range t.Names {
		if s, ok := p.Matrices[t.key(n)]; ok {
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
		if t, ok := TargetOf(name); ok {
			for _, n := range t.Names {
				used[t.key(n)] = true
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
