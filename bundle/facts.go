package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"forge/lut"
	"forge/safetensors"
)

// Keys of a shard's safetensors "__metadata__" (doc.go, "Integrity").
const (
	metaFormat        = "format"         // "forge" in every version
	metaFormatVersion = "format_version" // the layout version, from version 2
	metaMatrixPrefix  = "matrix:"        // + matrix name → its facts as JSON (version 2)
)

// factsOf returns the facts of a manifest entry.
func factsOf(e MatrixEntry) Facts {
	return Facts{Format: e.Format, Shape: e.Shape, Rank: e.Rank, Raw: e.Raw, Rotation: e.Rotation}
}

func (f Facts) encode() string {
	raw, err := json.Marshal(f)
	if err != nil {
		panic("bundle: facts do not encode: " + err.Error()) // plain strings and integers
	}
	return string(raw)
}

func decodeFacts(s string) (Facts, error) {
	var f Facts
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, err
	}
	if dec.More() {
		return f, fmt.Errorf("trailing data after the facts")
	}
	return f, nil
}

// diffFacts names the first field in which the manifest's facts m and the
// shard's facts s differ, as "rotation seed 1003, the shard X says 1004";
// "" when they agree.
func diffFacts(m, s Facts, shard string) string {
	says := "the shard " + shard + " says"
	switch {
	case m.Format != s.Format:
		return fmt.Sprintf("format %q, %s %q", m.Format, says, s.Format)
	case m.Shape != s.Shape:
		return fmt.Sprintf("shape %v, %s %v", m.Shape, says, s.Shape)
	case m.Rank != s.Rank:
		return fmt.Sprintf("rank %d, %s %d", m.Rank, says, s.Rank)
	case m.Raw != s.Raw:
		return fmt.Sprintf("raw %t, %s %t", m.Raw, says, s.Raw)
	case m.Rotation == nil && s.Rotation == nil:
		return ""
	case m.Rotation == nil:
		return fmt.Sprintf("no rotation, %s %s", says, describeRotation(s.Rotation))
	case s.Rotation == nil:
		return fmt.Sprintf("%s, %s none", describeRotation(m.Rotation), says)
	case m.Rotation.Kind != s.Rotation.Kind:
		return fmt.Sprintf("rotation kind %q, %s %q", m.Rotation.Kind, says, s.Rotation.Kind)
	case m.Rotation.Seed != s.Rotation.Seed:
		return fmt.Sprintf("rotation seed %d, %s %d", m.Rotation.Seed, says, s.Rotation.Seed)
	case m.Rotation.Block != s.Rotation.Block:
		return fmt.Sprintf("rotation block %d, %s %d", m.Rotation.Block, says, s.Rotation.Block)
	case m.Rotation.Signs != s.Rotation.Signs:
		return fmt.Sprintf("rotation signs %s, %s %s", signsText(m.Rotation.Signs), says, signsText(s.Rotation.Signs))
	}
	return ""
}

// describeRotation is "rotation " + r.String().
func describeRotation(r *RotationEntry) string { return "rotation " + r.String() }

// String describes the rotation as "hadamard seed 1003 block 256", with
// " signs numpy" when the signs are not forge's.
func (r *RotationEntry) String() string {
	s := fmt.Sprintf("%s seed %d block %d", r.Kind, r.Seed, r.Block)
	if r.Signs != "" {
		s += " signs " + r.Signs
	}
	return s
}

// signsText quotes a Signs value, "none" for the absent one.
func signsText(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

// shardMetadata is the "__metadata__" of a shard holding the entries es.
func shardMetadata(es []MatrixEntry) map[string]string {
	meta := map[string]string{metaFormat: "forge", metaFormatVersion: strconv.Itoa(FormatVersion)}
	for _, e := range es {
		meta[metaMatrixPrefix+e.Name] = factsOf(e).encode()
	}
	return meta
}

// itemOf is the Item the facts of the matrix name describe, with the facts
// checked enough for tensorsOf and newEntry: a lut format, or for a raw
// matrix a float dtype; a positive shape; a non-negative rank, none on a raw
// matrix; no rotation on a raw matrix (a dense matrix applies none); a
// rotation's sign generator one this forge knows.
func itemOf(name string, e Facts) (Item, error) {
	it := Item{Name: name, Shape: []int{e.Shape[0], e.Shape[1]}, Rank: e.Rank, Matrix: true}
	switch {
	case e.Shape[0] <= 0 || e.Shape[1] <= 0:
		return it, fmt.Errorf("shape %v is not positive", e.Shape)
	case e.Rank < 0:
		return it, fmt.Errorf("rank %d is negative", e.Rank)
	case e.Raw && e.Rank != 0:
		return it, fmt.Errorf("raw with rank %d (a raw matrix has no low-rank factors)", e.Rank)
	case e.Raw && e.Rotation != nil:
		return it, fmt.Errorf("raw with a rotation (a raw matrix is stored unrotated)")
	}
	if e.Rotation != nil {
		if _, err := e.Rotation.SignSource(); err != nil {
			return it, err
		}
	}
	if e.Raw {
		dt, err := safetensors.ParseDType(strings.ToUpper(e.Format))
		if err != nil || (dt != safetensors.BF16 && dt != safetensors.F16 && dt != safetensors.F32) {
			return it, fmt.Errorf("raw with format %q, not bf16, f16 or f32", e.Format)
		}
		it.DType = dt
		return it, nil
	}
	f, err := lut.ParseFormat(e.Format)
	if err != nil {
		return it, fmt.Errorf("format: %w", err)
	}
	it.Format = f
	return it, nil
}

// newEntry is the manifest entry of an item as written: its facts and its
// byte accounting, lut's Size for a lut format and out·in·dtype size for a
// raw matrix, with bits per weight 8·bytes/(out·in). Open recomputes it
// from the facts to check bytes and bpw.
func newEntry(it Item) MatrixEntry {
	out, in := it.Shape[0], it.Shape[1]
	e := MatrixEntry{Name: it.Name, Shape: [2]int{out, in}}
	if it.Format.Kind == 0 {
		n := int64(out) * int64(in) * int64(it.DType.Size())
		e.Format, e.Raw, e.Bytes = strings.ToLower(it.DType.String()), true, n
		e.BPW = 8 * float64(n) / float64(out*in)
		return e
	}
	e.Format, e.Rank, e.Rotation = it.Format.String(), it.Rank, it.Rotation
	e.Bytes = it.Format.Size(out, in, it.Rank).Total()
	e.BPW = it.Format.BitsPerWeight(out, in, it.Rank)
	return e
}
