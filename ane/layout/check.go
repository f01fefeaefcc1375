package layout

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"forge/lut"
	"forge/safetensors"
	"forge/tensor"
)

// checkTensors checks that file holds exactly the tensors of its entries
// (Tensors), each with its dtype and shape.
func checkTensors(f *safetensors.File, file string, entries []Entry) error {
	want := map[string]bool{}
	for _, e := range entries {
		for _, t := range Tensors(e.Key, e.Format, e.Shape[0], e.Shape[1], e.Rank) {
			want[t.Name] = true
			info, ok := f.Info(t.Name)
			switch {
			case !ok:
				return fmt.Errorf("%s: %w: missing tensor %q (%s %dx%d stores %s)", file, ErrLayout, t.Name, e.Format, e.Shape[0], e.Shape[1], describe(e))
			case info.DType != t.DType:
				return fmt.Errorf("%s: %w: tensor %q: dtype %v, want %v (%s)", file, ErrLayout, t.Name, info.DType, t.DType, e.Format)
			case !slices.Equal(info.Shape, t.Shape):
				return fmt.Errorf("%s: %w: tensor %q: shape %v, want %v (%s %dx%d)", file, ErrLayout, t.Name, info.Shape, t.Shape, e.Format, e.Shape[0], e.Shape[1])
			}
		}
	}
	for _, n := range f.Names() {
		if !want[n] {
			return fmt.Errorf("%s: %w: tensor %q is not part of the layout (%s)", file, ErrLayout, n, unexpected(n, entries))
		}
	}
	return nil
}

// describe lists the tensor suffixes of an entry: "lut, idx, scale".
func describe(e Entry) string {
	var s []string
	for _, t := range Tensors(e.Key, e.Format, e.Shape[0], e.Shape[1], e.Rank) {
		s = append(s, strings.TrimPrefix(t.Name, e.Key+"."))
	}
	return strings.Join(s, ", ")
}

// unexpected says why tensor n does not belong to a file of entries.
func unexpected(n string, entries []Entry) string {
	for _, e := range entries {
		if k, ok := strings.CutPrefix(n, e.Key+"."); ok {
			if k == "lr_b" {
				return "lr_b without lr_a"
			}
			return fmt.Sprintf("%s is %s, stored as %s", e.Key, e.Format, describe(e))
		}
	}
	return "no matrix of this file has that key"
}

// checkValues checks an entry's values: index codes below the codebook
// size, INT8 codes in [−127, 127], finite fp16 codebooks, scales and
// factors. Unquantized weights are not scanned (as bundle.Open does not).
func checkValues(f *safetensors.File, e Entry) error {
	var halves []string
	switch e.Format.Kind {
	case lut.Scalar, lut.Vector:
		if err := checkIndex(f, e); err != nil {
			return err
		}
		halves = []string{".lut", ".scale"}
	case lut.Int8:
		codes, err := f.Bytes(e.Key + ".int8")
		if err != nil {
			return err
		}
		if i := slices.Index(codes, 0x80); i >= 0 {
			return fmt.Errorf("%s: %w: tensor %q: code -128 at [%d][%d] (INT8 codes are in [-127, 127])", e.File, ErrLayout, e.Key+".int8", i/e.Shape[1], i%e.Shape[1])
		}
		halves = []string{".scale"}
	}
	if e.Rank > 0 {
		halves = append(halves, ".lr_a", ".lr_b")
	}
	for _, sfx := range halves {
		v, err := f.Uint16(e.Key + sfx)
		if err != nil {
			return err
		}
		for i, h := range v {
			if h&0x7c00 == 0x7c00 {
				return fmt.Errorf("%s: %w: tensor %q: element %d is %v", e.File, ErrLayout, e.Key+sfx, i, tensor.F16ToF32(h))
			}
		}
	}
	return nil
}

// checkIndex checks that every code of e's index matrix is below the
// codebook size K = 2^b: c & ^(K−1) = 0, tested eight bytes at a time.
func checkIndex(f *safetensors.File, e Entry) error {
	idx, err := f.Bytes(e.Key + ".idx")
	if err != nil {
		return err
	}
	k := e.Format.Entries()
	if k >= 256 {
		return nil
	}
	high := byte(0xff &^ (k - 1))
	mask := uint64(high) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(idx) && binary.LittleEndian.Uint64(idx[i:])&mask == 0; i += 8 {
	}
	for ; i < len(idx); i++ {
		if idx[i]&high != 0 {
			return fmt.Errorf("%s: %w: tensor %q: index %d at [%d][%d] is not below the codebook's %d entries",
				e.File, ErrLayout, e.Key+".idx", idx[i], i/e.Shape[1], i%e.Shape[1], k)
		}
	}
	return nil
}

// Matrix builds the lut.Matrix of the matrix name (an Entry's): its codebook,
// scales and factors are views of the mapped file, its indices packed as
// lut's doc says (a view when they are 8-bit), its rotation
// lut.NewHadamardSigns(in, seed, signs), the signs from the generator the
// file's sign_rng names. Errors name the file and the tensor.
func (l *Layout) Matrix(name string) (*lut.Matrix, error) {
	e, ok := l.Entry(name)
	if !ok {
		return nil, fmt.Errorf("layout %s: matrix %q is not stored there", l.dir, name)
	}
	m, err := build(l.files[e.File], e)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %s: matrix %q (key %q): %w", l.dir, e.File, e.Name, e.Key, err)
	}
	return m, nil
}

func build(f *safetensors.File, e Entry) (*lut.Matrix, error) {
	var p lut.Parts
	var err error
	u16 := func(dst *[]uint16, sfx string) {
		if err == nil {
			*dst, err = f.Uint16(e.Key + sfx)
		}
	}
	out, in := e.Shape[0], e.Shape[1]
	switch e.Format.Kind {
	case lut.Scalar, lut.Vector:
		if err = checkIndex(f, e); err != nil {
			return nil, err
		}
		codes, _ := f.Bytes(e.Key + ".idx")
		if p.Index = codes; e.Format.Bits < 8 {
			p.Index = make([]byte, lut.PackedLen(len(codes), e.Format.Bits))
			lut.Pack(p.Index, codes, e.Format.Bits)
		}
		u16(&p.LUT, ".lut")
		u16(&p.Scale, ".scale")
	case lut.Int8:
		p.Index, err = f.Bytes(e.Key + ".int8")
		u16(&p.Scale, ".scale")
	default:
		u16(&p.Weight, ".weight")
	}
	if e.Rank > 0 {
		u16(&p.LowRankA, ".lr_a")
		u16(&p.LowRankB, ".lr_b")
	}
	if err != nil {
		return nil, err
	}
	if r := e.Rotation; r != nil {
		if block := lut.HadamardBlock(in); block != r.Block {
			return nil, fmt.Errorf("%w: rotation block %d, forge's for a %d-wide input is %d", ErrLayout, r.Block, in, block)
		}
		p.Rotation = lut.NewHadamardSigns(in, r.Seed, r.Signs)
	}
	return lut.New(e.Format, out, in, p)
}
