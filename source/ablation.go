package source

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
// layer: it is selected whenever its part is. Ablation{Hi: -1} selects
// every quantizable matrix.
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

// Selects reports whether the checkpoint matrix name is taken from the
// candidate: a quantizable matrix of a selected part in a selected layer.
func (a Ablation) Selects(name string) bool {
	t, ok := model.Lookup(name)
	if !ok || !t.Quantizable || (len(a.Parts) > 0 && !slices.Contains(a.Parts, t.Part)) {
		return false
	}
	if t.Layer < 0 {
		return true
	}
	return t.Layer >= a.Lo && (a.Hi < 0 || t.Layer <= a.Hi)
}

// Ablated is the reference model with the selected Linears taken from the
// candidate (the seed's PARTS / QLAYERS evaluation; parts:
// docs/quantization.md §4.1): the damage of quantizing only those matrices.
// Config and vectors are the reference's. Close closes both sources.
type Ablated struct {
	ref, cand Source
	sel       Ablation
}

// NewAblation mixes ref and cand after checking that they are the same
// model: equal configurations, and sel's layers inside the model. On
// success the Ablated owns both sources; on error the caller still does.
func NewAblation(ref, cand Source, sel Ablation) (*Ablated, error) {
	return mix(ref, cand, sel, "the reference and the candidate")
}

// OpenAblation opens the reference and the candidate directories (Open)
// and mixes them (NewAblation); on error nothing is left open.
func OpenAblation(refDir, candDir string, sel Ablation) (*Ablated, error) {
	ref, err := Open(refDir)
	if err != nil {
		return nil, err
	}
	cand, err := Open(candDir)
	if err != nil {
		ref.Close()
		return nil, err
	}
	a, err := mix(ref, cand, sel, refDir+" and "+candDir)
	if err != nil {
		ref.Close()
		cand.Close()
		return nil, err
	}
	return a, nil
}

// mix is NewAblation; both names the two sources in its errors.
func mix(ref, cand Source, sel Ablation, both string) (*Ablated, error) {
	rc, err1 := ref.Config()
	cc, err2 := cand.Config()
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if fmt.Sprint(rc) != fmt.Sprint(cc) {
		return nil, fmt.Errorf("ablation: %s are different models (configurations differ)", both)
	}
	if sel.Hi >= len(rc.Layers) {
		return nil, fmt.Errorf("ablation layers: the model has layers 0-%d", len(rc.Layers)-1)
	}
	return &Ablated{ref: ref, cand: cand, sel: sel}, nil
}

// Candidate returns the source the selected matrices come from.
func (a *Ablated) Candidate() Source { return a.cand }

// Selection returns the matrices taken from the candidate.
func (a *Ablated) Selection() Ablation { return a.sel }

func (a *Ablated) Config() (model.Config, error)         { return a.ref.Config() }
func (a *Ablated) Vector(name string) ([]float32, error) { return a.ref.Vector(name) }

// Linear is the candidate's matrix when the selection takes name, else the
// reference's.
func (a *Ablated) Linear(name string) (model.Linear, error) {
	if a.sel.Selects(name) {
		return a.cand.Linear(name)
	}
	return a.ref.Linear(name)
}

// Close closes the reference and the candidate.
func (a *Ablated) Close() error {
	return errors.Join(a.ref.Close(), a.cand.Close())
}
