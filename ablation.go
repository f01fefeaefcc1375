package forge

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"forge/model"
	"forge/plan"
)

// Ablation selects the matrices an ablation takes from the candidate:
// those of Parts (plan part names: mlp, gdn, attn, kv, head; empty = all)
// in layers [Lo, Hi] (Hi < 0: through the last layer). The head has no
// layer: it is selected whenever its part is.
type Ablation struct {
	Parts  []model.Part
	Lo, Hi int
}

// ParseAblation parses parts "mlp,gdn" and layers "24-63" (or "5", or
// "" for every layer).
func ParseAblation(parts, layers string) (Ablation, error) {
	a := Ablation{Hi: -1}
	for _, p := range strings.Split(parts, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		part, ok := model.ParsePart(p)
		if !ok || !slices.Contains(model.QuantParts, part) {
			return a, fmt.Errorf("ablation parts: unknown part %q (parts: %s)", p, plan.QuantPartNames())
		}
		a.Parts = append(a.Parts, part)
	}
	if layers = strings.TrimSpace(layers); layers != "" {
		lo, hi, found := strings.Cut(layers, "-")
		var err1, err2 error
		a.Lo, err1 = strconv.Atoi(strings.TrimSpace(lo))
		a.Hi = a.Lo
		if found {
			a.Hi, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err := errors.Join(err1, err2); err != nil || a.Lo < 0 || a.Hi < a.Lo {
			return a, fmt.Errorf("ablation layers %q: want LO-HI (e.g. 24-63) or one layer", layers)
		}
	}
	return a, nil
}

// selects reports whether the checkpoint matrix name is taken from the
// candidate.
func (a Ablation) selects(name string) bool {
	t, ok := model.Lookup(name)
	if !ok || !t.Quantizable || (len(a.Parts) > 0 && !slices.Contains(a.Parts, t.Part)) {
		return false
	}
	if t.Layer < 0 {
		return true
	}
	return t.Layer >= a.Lo && (a.Hi < 0 || t.Layer <= a.Hi)
}

// ablationSource is the reference model with the selected Linears taken
// from the candidate (the seed's PARTS / QLAYERS evaluation; parts: docs/quantization.md §4.1): the damage of
// quantizing only those matrices.
type ablationSource struct {
	ref, cand source
	sel       Ablation
}

// openAblation opens the reference and the candidate and checks that they
// are the same model (same configuration and the candidate's matrices
// shaped like the reference's).
func openAblation(refDir, candDir string, sel Ablation) (*ablationSource, error) {
	ref, err := openSource(refDir)
	if err != nil {
		return nil, err
	}
	cand, err := openSource(candDir)
	if err != nil {
		ref.Close()
		return nil, err
	}
	a := &ablationSource{ref: ref, cand: cand, sel: sel}
	rc, err1 := ref.Config()
	cc, err2 := cand.Config()
	if err := errors.Join(err1, err2); err != nil {
		a.Close()
		return nil, err
	}
	if fmt.Sprint(rc) != fmt.Sprint(cc) {
		a.Close()
		return nil, fmt.Errorf("ablation: %s and %s are different models (configurations differ)", refDir, candDir)
	}
	if sel.Hi >= len(rc.Layers) {
		a.Close()
		return nil, fmt.Errorf("ablation layers: the model has layers 0-%d", len(rc.Layers)-1)
	}
	return a, nil
}

func (a *ablationSource) Config() (model.Config, error)         { return a.ref.Config() }
func (a *ablationSource) Vector(name string) ([]float32, error) { return a.ref.Vector(name) }

func (a *ablationSource) Linear(name string) (model.Linear, error) {
	if a.sel.selects(name) {
		return a.cand.Linear(name)
	}
	return a.ref.Linear(name)
}

func (a *ablationSource) Close() error {
	return errors.Join(a.ref.Close(), a.cand.Close())
}
