package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"forge/internal/budget"
	"forge/lut"
	"forge/model"
)

// ErrPlan is wrapped by every error about a plan's contents.
var ErrPlan = errors.New("invalid plan")

// Spec is what a plan assigns to one matrix.
type Spec struct {
	Format lut.Format
	Rank   int // low-rank correction rank; 0 = none
}

// Plan is a parsed plan. The zero value assigns nothing.
type Plan struct {
	Default  *Spec
	Parts    map[model.Part]Spec // by part: mlp, gdn, attn, kv, head (model.QuantParts)
	Matrices map[string]Spec     // by key: "23.gate", "0.mixer", "5.mixer-kv", "head", …
	// Basis sets, per layer, whether the MLP inputs are Hadamard-rotated
	// (true: the reference's "online" basis) or not ("plain"), over the
	// recipe's Hadamard switch (Recipe.Rotation). Layers it does not name
	// follow the recipe.
	Basis map[int]bool
	// Prediction is what the budgeted planner predicted for this plan
	// (Solution.Plan); nil for a plan written by hand.
	Prediction *Prediction
	// Sweep names the measurements the plan was chosen from; quantize
	// refuses the plan for another model (CheckModel). Nil for a plan
	// written by hand.
	Sweep *SweepRef
}

type fileJSON struct {
	Default    json.RawMessage            `json:"default"`
	Parts      map[string]json.RawMessage `json:"parts"`
	Matrices   map[string]json.RawMessage `json:"matrices"`
	Basis      map[string]string          `json:"basis"`
	Prediction *Prediction                `json:"prediction"`
	Sweep      *SweepRef                  `json:"sweep"`
}

// Read parses the plan file at path.
func Read(path string) (*Plan, error) {
	b, err := budget.ReadFile(path, budget.MaxConfigFile)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// Parse parses a plan from JSON: forge's form (package doc), or the
// reference's flat form (top-level keys "<layer>.<name>", see flat.go);
// unknown fields, parts, keys and malformed formats are errors.
func Parse(b []byte) (*Plan, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) == nil && hasFlatKey(top) {
		return parseFlat(top)
	}
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrPlan)
	}
	return f.plan()
}

// plan checks and converts the decoded file.
func (f *fileJSON) plan() (*Plan, error) {
	p := &Plan{Parts: map[model.Part]Spec{}, Matrices: map[string]Spec{}, Basis: map[int]bool{},
		Prediction: f.Prediction, Sweep: f.Sweep}
	if len(f.Default) > 0 {
		s, err := parseSpec(f.Default)
		if err != nil {
			return nil, fmt.Errorf("%w: default: %v", ErrPlan, err)
		}
		p.Default = &s
	}
	for k, v := range f.Parts {
		part, ok := model.ParsePart(k)
		if !ok || !slices.Contains(model.QuantParts, part) {
			return nil, fmt.Errorf("%w: unknown part %q (parts: %s)", ErrPlan, k, QuantPartNames())
		}
		s, err := parseSpec(v)
		if err != nil {
			return nil, fmt.Errorf("%w: part %q: %v", ErrPlan, k, err)
		}
		p.Parts[part] = s
	}
	for k, v := range f.Matrices {
		if _, _, err := splitKey(k); err != nil {
			return nil, fmt.Errorf("%w: matrix key %q: %v", ErrPlan, k, err)
		}
		s, err := parseSpec(v)
		if err != nil {
			return nil, fmt.Errorf("%w: matrix %q: %v", ErrPlan, k, err)
		}
		p.Matrices[k] = s
	}
	for k, v := range f.Basis {
		li, err := strconv.Atoi(k)
		if err != nil || li < 0 || strconv.Itoa(li) != k {
			return nil, fmt.Errorf("%w: basis key %q: want a layer number", ErrPlan, k)
		}
		if p.Basis[li], err = parseBasis(v); err != nil {
			return nil, fmt.Errorf("%w: basis of layer %d: %v", ErrPlan, li, err)
		}
	}
	return p, nil
}

// parseBasis reads a layer's MLP input basis: "online" (Hadamard-rotated)
// or "plain".
func parseBasis(v string) (bool, error) {
	switch v {
	case "online":
		return true, nil
	case "plain":
		return false, nil
	}
	return false, fmt.Errorf("%q: want \"online\" or \"plain\"", v)
}

// CheckModel refuses a plan chosen from a sweep of another model: fp is
// the fingerprint of the checkpoint about to be quantized
// (checkpoint.Fingerprint). A plan without a sweep record fits any model.
func (p *Plan) CheckModel(fp string) error {
	if p == nil || p.Sweep == nil || p.Sweep.ModelFingerprint == "" || p.Sweep.ModelFingerprint == fp {
		return nil
	}
	return fmt.Errorf("%w: it was chosen from sweep %s of the model with fingerprint %s, but this model's fingerprint is %s: "+
		"its measurements say nothing about this model; run forge sweep and forge plan on it", ErrPlan,
		p.Sweep.Path, p.Sweep.ModelFingerprint, fp)
}

// QuantPartNames lists the parts a plan may name, comma-separated.
func QuantPartNames() string {
	var names []string
	for _, p := range model.QuantParts {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

func parseSpec(raw json.RawMessage) (Spec, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		f, err := lut.ParseFormat(name)
		return Spec{Format: f}, err
	}
	var o struct {
		Format string `json:"format"`
		Rank   int    `json:"rank"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Spec{}, fmt.Errorf("want a format name or {\"format\", \"rank\"}: %v", err)
	}
	if o.Rank < 0 {
		return Spec{}, fmt.Errorf("rank %d is negative", o.Rank)
	}
	f, err := lut.ParseFormat(o.Format)
	return Spec{Format: f, Rank: o.Rank}, err
}

// splitKey splits "23.gate" into (23, "gate"); "head" gives (-1, "head").
func splitKey(k string) (int, string, error) {
	if k == "head" {
		return -1, "head", nil
	}
	num, name, ok := strings.Cut(k, ".")
	li, err := strconv.Atoi(num)
	if !ok || err != nil || li < 0 || strconv.Itoa(li) != num {
		return 0, "", errors.New(`want LAYER.NAME (e.g. "23.gate") or "head"`)
	}
	if !slices.Contains(planKeys(), name) {
		return 0, "", fmt.Errorf("unknown matrix name %q", name)
	}
	return li, name, nil
}
