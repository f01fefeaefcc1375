package plan

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"

	"forge/model"
)

// Marshal writes p in forge's plan file form (package doc) as indented
// JSON, which Parse reads back to an equal Plan: "default", "parts",
// "matrices" (by layer, then in the tensor table's key order, "head"
// last), "basis", "prediction" and "sweep", each only when set.
func (p *Plan) Marshal() ([]byte, error) {
	var top object
	if p.Default != nil {
		top = append(top, field{"default", specJSON(*p.Default)})
	}
	if len(p.Parts) > 0 {
		var parts object
		for _, part := range model.QuantParts {
			if s, ok := p.Parts[part]; ok {
				parts = append(parts, field{string(part), specJSON(s)})
			}
		}
		top = append(top, field{"parts", parts})
	}
	if len(p.Matrices) > 0 {
		keys := make([]string, 0, len(p.Matrices))
		for k := range p.Matrices {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareKeys)
		var ms object
		for _, k := range keys {
			ms = append(ms, field{k, specJSON(p.Matrices[k])})
		}
		top = append(top, field{"matrices", ms})
	}
	if len(p.Basis) > 0 {
		var bs object
		for _, li := range slices.Sorted(maps.Keys(p.Basis)) {
			b := "plain"
			if p.Basis[li] {
				b = "online"
			}
			bs = append(bs, field{strconv.Itoa(li), b})
		}
		top = append(top, field{"basis", bs})
	}
	if p.Prediction != nil {
		top = append(top, field{"prediction", p.Prediction})
	}
	if p.Sweep != nil {
		top = append(top, field{"sweep", p.Sweep})
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// specJSON is a spec as a plan file writes it: the format's name, or
// {"format", "rank"} with a correction.
func specJSON(s Spec) any {
	if s.Rank == 0 {
		return s.Format.String()
	}
	return struct {
		Format string `json:"format"`
		Rank   int    `json:"rank"`
	}{s.Format.String(), s.Rank}
}

// compareKeys orders matrix keys by layer ("head" after every layer),
// then by name in planKeys order.
func compareKeys(a, b string) int {
	la, na, _ := splitKey(a)
	lb, nb, _ := splitKey(b)
	if la < 0 {
		la = math.MaxInt
	}
	if lb < 0 {
		lb = math.MaxInt
	}
	if la != lb {
		return cmp.Compare(la, lb)
	}
	names := planKeys()
	return slices.Index(names, na) - slices.Index(names, nb)
}

// object is a JSON object that keeps its keys in order.
type object []field

type field struct {
	k string
	v any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.k)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalJSON writes p in its plan file form (Marshal), so that a plan
// recorded inside other JSON (a bundle's manifest) reads as the file did.
func (p *Plan) MarshalJSON() ([]byte, error) {
	b, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
