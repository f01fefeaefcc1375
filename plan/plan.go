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
	Matrices map[string]Spec     // by key: "23.gate", "0.mixer", "head", …
}

type fileJSON struct {
	Default  json.RawMessage            `json:"default"`
	Parts    map[string]json.RawMessage `json:"parts"`
	Matrices map[string]json.RawMessage `json:"matrices"`
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

// Parse parses a plan from JSON; unknown fields, parts and malformed
// formats are errors.
func Parse(b []byte) (*Plan, error) {
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	p := &Plan{Parts: map[model.Part]Spec{}, Matrices: map[string]Spec{}}
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
	return p, nil
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
	if !slices.Contains(model.PlanKeys(), name) {
		return 0, "", fmt.Errorf("unknown matrix name %q", name)
	}
	return li, name, nil
}
