package bundle

import (
	"encoding/binary"
	"fmt"
	"strings"

	"forge/lut"
	"forge/safetensors"
)

// The matrix codec: a lut.Matrix ↔ its facts and stored arrays, in the
// layout of doc.go. The Writer, Open and the quantize work directory
// (WorkDir) all go through it.

// Facts are what a matrix is computed from besides its arrays: format,
// shape [out, in], low-rank rank, raw flag (kept in its source dtype, not a
// lut format) and rotation. From version 2 a bundle records them twice, in
// forge.json and in the metadata of the shard holding the arrays (doc.go,
// "Integrity"), as this JSON.
type Facts struct {
	Format   string         `json:"format"`
	Shape    [2]int         `json:"shape"`
	Rank     int            `json:"rank,omitempty"`
	Raw      bool           `json:"raw,omitempty"`
	Rotation *RotationEntry `json:"rotation,omitempty"`
}

// Arrays gives the stored arrays of a matrix by tensor name;
// *safetensors.File is one.
type Arrays interface {
	Bytes(tensor string) ([]byte, error)
	// Uint16 returns an F16 or BF16 tensor's values.
	Uint16(tensor string) ([]uint16, error)
}

// evicter is Arrays that can drop the resident pages of a tensor's view
// (a mapped bundle's shardArrays): lut.Parts.Evict.
type evicter interface {
	Evict(tensor string, b []byte)
}

// EncodeMatrix returns the facts of m, stored as the matrix name, and its
// arrays: the tensors doc.go lists ({key}.lut, {key}.idx, {key}.scale,
// {key}.lr_a, {key}.lr_b for a quantized format; name itself for bf16 or
// fp16), in that order, with their dtypes and shapes and their bytes
// (little-endian copies of m's fp16 arrays; the index bytes are m's own).
// A rotation other than a *lut.Hadamard cannot be stored and is an error.
func EncodeMatrix(name string, m *lut.Matrix) (Facts, []safetensors.Tensor, error) {
	out, in := m.Dims()
	p := m.Parts()
	f := Facts{Format: m.Format().String(), Shape: [2]int{out, in}, Rank: m.Rank()}
	if r := p.Rotation; r != nil {
		h, ok := r.(*lut.Hadamard)
		if !ok {
			return f, nil, fmt.Errorf("matrix %q: rotation %T cannot be stored (only lut.Hadamard)", name, r)
		}
		f.Rotation = NewRotationEntry(h.Seed(), h.Block(), h.Signs())
	}
	infos, err := tensorsOf(Item{Name: name, Shape: []int{out, in}, Format: m.Format(), Rank: m.Rank()})
	if err != nil {
		return f, nil, err
	}
	ts := make([]safetensors.Tensor, len(infos))
	for i, t := range infos {
		ts[i] = safetensors.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape}
		if arr := arrayOf(name, t.Name); arr == arrIndex {
			ts[i].Data = p.Index
		} else {
			ts[i].Data = u16Bytes(*u16Field(&p, arr))
		}
	}
	return f, ts, nil
}

// DecodeMatrix builds the matrix name with facts f from its arrays in src,
// checking the facts (a lut format, positive shape, rank ≥ 0, a rotation of
// kind "hadamard" with lut.HadamardBlock's block for the width and a known
// sign generator, lut.NewHadamardSigns) and the
// arrays (lut.New: exactly the sizes the format calls for). The fp16
// arrays are src's own when it gives views (a mapped file). Errors name
// the matrix.
func DecodeMatrix(name string, f Facts, src Arrays) (*lut.Matrix, error) {
	if f.Raw {
		return nil, fmt.Errorf("matrix %q: raw (%s), not a lut format", name, f.Format)
	}
	it, err := itemOf(name, f)
	if err != nil {
		return nil, fmt.Errorf("matrix %q: %w", name, err)
	}
	infos, err := tensorsOf(it)
	if err != nil {
		return nil, err
	}
	var p lut.Parts
	for _, t := range infos {
		if arr := arrayOf(name, t.Name); arr == arrIndex {
			p.Index, err = src.Bytes(t.Name)
			if e, ok := src.(evicter); ok {
				p.Evict = func(b []byte) { e.Evict(t.Name, b) }
			}
		} else {
			*u16Field(&p, arr), err = src.Uint16(t.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("matrix %q: %w", name, err)
		}
	}
	if r := f.Rotation; r != nil {
		if block := lut.HadamardBlock(f.Shape[1]); r.Kind != "hadamard" || block != r.Block {
			return nil, fmt.Errorf("matrix %q: rotation %q with %d-wide blocks, want \"hadamard\" with %d", name, r.Kind, r.Block, block)
		}
		signs, err := r.SignSource()
		if err != nil {
			return nil, fmt.Errorf("matrix %q: %w", name, err)
		}
		p.Rotation = lut.NewHadamardSigns(f.Shape[1], r.Seed, signs)
	}
	m, err := lut.New(it.Format, f.Shape[0], f.Shape[1], p)
	if err != nil {
		return nil, fmt.Errorf("matrix %q: %w", name, err)
	}
	return m, nil
}

// The arrays of a matrix, by the suffix of their tensor name.
const (
	arrWeight = "" // bf16/fp16: the matrix's own name
	arrLUT    = ".lut"
	arrIndex  = ".idx"
	arrScale  = ".scale"
	arrLowA   = ".lr_a"
	arrLowB   = ".lr_b"
)

// arrayOf returns which array of the matrix name the tensor is.
func arrayOf(name, tensor string) string {
	if tensor == name {
		return arrWeight
	}
	return strings.TrimPrefix(tensor, Key(name))
}

// u16Field returns the fp16 field of p that holds the array arr.
func u16Field(p *lut.Parts, arr string) *[]uint16 {
	switch arr {
	case arrWeight:
		return &p.Weight
	case arrLUT:
		return &p.LUT
	case arrScale:
		return &p.Scale
	case arrLowA:
		return &p.LowRankA
	case arrLowB:
		return &p.LowRankB
	}
	panic("bundle: no fp16 array " + arr) // tensorsOf makes no other
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}
