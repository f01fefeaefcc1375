package layout

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// *bundle.Bundle is a Source in the root's tests; here fakeSource is.
var _ Source = (*fakeSource)(nil)

// tinyConfig is a two-layer model (DeltaNet, attention) small enough to
// build in microseconds: hidden 32, MLP 96 (both inputs have 32-wide Hadamard blocks), q 64×32, k/v 16×32, o 32×32,
// qkv 32×32, z 16×32, out 32×16, head 48×32.
func tinyConfig() *model.Config {
	return &model.Config{Vocab: 48, Hidden: 32, Intermediate: 96, Layers: []model.LayerKind{model.DeltaNet, model.Attention},
		Heads: 2, KVHeads: 1, HeadDim: 16, Eps: 1e-6, KeyHeads: 1, ValueHeads: 2, KeyDim: 8, ValueDim: 8, ConvKernel: 4,
		RopeTheta: 1e6, RotaryFactor: 0.25}
}

// spec says how the fake source stores one matrix: a lut format (or raw
// in dtype when format is ""), rank, rotation seed (0: none) and the
// generator of its signs.
type spec struct {
	format string
	rank   int
	seed   uint64
	signs  lut.SignSource
	raw    safetensors.DType
}

// fakeSource holds random matrices for a configuration.
type fakeSource struct {
	m   map[string]*lut.Matrix
	raw map[string]safetensors.Tensor
}

func (s *fakeSource) Matrix(name string) (*lut.Matrix, error) { return s.m[name], nil }

func (s *fakeSource) Raw(name string) (safetensors.TensorInfo, []byte, error) {
	t, ok := s.raw[name]
	if !ok {
		return safetensors.TensorInfo{}, nil, fmt.Errorf("no raw tensor %q", name)
	}
	return safetensors.TensorInfo{Name: name, DType: t.DType, Shape: t.Shape}, t.Data, nil
}

// newSource builds every quantizable matrix of cfg: the spec of its role
// (plan key: "gate", "q", "head" …; a full name overrides), else base.
func newSource(t testing.TB, cfg *model.Config, base spec, by map[string]spec) *fakeSource {
	t.Helper()
	src := &fakeSource{m: map[string]*lut.Matrix{}, raw: map[string]safetensors.Tensor{}}
	for k, s := range model.Tensors(cfg) {
		if !s.Quantizable {
			continue
		}
		sp, ok := by[s.Name]
		if !ok {
			if sp, ok = by[s.Role]; !ok {
				sp = base
			}
		}
		if sp.format == "" {
			src.raw[s.Name] = safetensors.Tensor{Name: s.Name, DType: sp.raw, Shape: s.Shape,
				Data: make([]byte, s.Shape[0]*s.Shape[1]*sp.raw.Size())}
			continue
		}
		f, err := lut.ParseFormat(sp.format)
		if err != nil {
			t.Fatal(err)
		}
		src.m[s.Name] = randomMatrix(t, f, s.Shape[0], s.Shape[1], sp.rank, sp.seed, sp.signs, uint64(k))
	}
	return src
}

// randomMatrix makes a lut.Matrix with uniform codes, N(0,1) fp16
// codebooks and factors, scales in [0.01, 0.02), and a Hadamard rotation
// of the input with signs from the generator signs when seed ≠ 0.
func randomMatrix(t testing.TB, f lut.Format, out, in, r int, seed uint64, signs lut.SignSource, k uint64) *lut.Matrix {
	t.Helper()
	g := rand.New(rand.NewPCG(k, 7))
	h := func(v float64) uint16 { return tensor.F32ToF16(float32(v)) }
	fill := func(n int, v func() uint16) []uint16 {
		s := make([]uint16, n)
		for i := range s {
			s[i] = v()
		}
		return s
	}
	var p lut.Parts
	if f.Quantized() {
		codes := make([]uint8, f.IndexRows(out)*in)
		for i := range codes {
			if f.Kind == lut.Int8 {
				codes[i] = uint8(int8(g.IntN(255) - 127))
			} else {
				codes[i] = uint8(g.IntN(f.Entries()))
			}
		}
		p.Index = codes
		if f.Kind != lut.Int8 {
			p.Index = make([]byte, lut.PackedLen(len(codes), f.Bits))
			lut.Pack(p.Index, codes, f.Bits)
			p.LUT = fill(f.Groups(out)*f.Entries()*f.Dim, func() uint16 { return h(g.NormFloat64()) })
		}
		p.Scale = fill(out, func() uint16 { return h(0.01 + 0.01*g.Float64()) })
	} else {
		p.Weight = fill(out*in, func() uint16 { return h(0.05 * g.NormFloat64()) })
	}
	if r > 0 {
		p.LowRankA = fill(out*r, func() uint16 { return h(0.1 * g.NormFloat64()) })
		p.LowRankB = fill(r*in, func() uint16 { return h(0.1 * g.NormFloat64()) })
	}
	if seed != 0 {
		p.Rotation = lut.NewHadamardSigns(in, seed, signs)
	}
	m, err := lut.New(f, out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeLayout plans and writes src's layout of cfg into a new directory.
func writeLayout(t testing.TB, cfg *model.Config, src Source) (string, []File) {
	t.Helper()
	files, err := Plan(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(context.Background(), dir, files, src, nil); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// readAll returns a file's tensors (with copies of their data) and metadata.
func readAll(t testing.TB, path string) ([]safetensors.Tensor, map[string]string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		b, _ := f.Bytes(n)
		ts = append(ts, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	return ts, f.Metadata()
}

// rewrite applies edit to a file's tensors and metadata and writes it back.
func rewrite(t testing.TB, path string, edit func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor) {
	t.Helper()
	ts, meta := readAll(t, path)
	ts = edit(ts, meta)
	if err := safetensors.WriteFile(path, ts, meta); err != nil {
		t.Fatal(err)
	}
}

// writeRawHeader writes a safetensors file with one tensor of a dtype the
// writer refuses (U16): an 8-byte length, the JSON header, the data.
func writeRawHeader(t testing.TB, path, name, dtype string, shape []int, size int) {
	t.Helper()
	hdr := fmt.Sprintf(`{"%s":{"dtype":"%s","shape":[%d,%d],"data_offsets":[0,%d]}}`, name, dtype, shape[0], shape[1], size)
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(append(b, hdr...), make([]byte, size)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func at(dir, name string) string { return filepath.Join(dir, name) }
