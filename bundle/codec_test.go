package bundle

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/lut"
	"forge/quant"
	"forge/safetensors"
	"forge/tensor"
)

// codecMatrix is a 24×64 matrix in format f by RTN, with a rank-r
// correction of random fp16 factors and the Hadamard rotation seed (when
// rot), for the codec tests.
func codecMatrix(t testing.TB, format string, r int, rot bool) *lut.Matrix {
	t.Helper()
	f, err := lut.ParseFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	const out, in = 24, 64
	g := rand.New(rand.NewPCG(uint64(len(format)), uint64(r)))
	w := tensor.New(out, in)
	for i := range w.Data {
		w.Data[i] = float32(g.NormFloat64())
	}
	m, err := quant.RTN(w, f, quant.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Parts()
	if r > 0 {
		p.LowRankA, p.LowRankB = make([]uint16, out*r), make([]uint16, r*in)
		for _, v := range [][]uint16{p.LowRankA, p.LowRankB} {
			for i := range v {
				v[i] = tensor.F32ToF16(float32(g.NormFloat64() / 8))
			}
		}
	}
	if rot {
		p.Rotation = lut.NewHadamard(in, 1003)
	}
	if m, err = lut.New(f, out, in, p); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCodecRoundTrip: EncodeMatrix gives the tensors doc.go lists (those
// tensorsOf declares for the facts, in order, with their dtypes and
// shapes), and DecodeMatrix rebuilds from them, written to and mapped from
// a safetensors file, a matrix with the same arrays, rank and rotation, for
// a scalar LUT with a correction and a rotation, a vector LUT, INT8 and
// bf16.
func TestCodecRoundTrip(t *testing.T) {
	cases := []struct {
		format string
		rank   int
		rot    bool
	}{
		{"LUT4 per-tensor + pcs", 4, true},
		{"LUT3 g8 + pcs", 0, false},
		{"vector 2x16 + pcs", 2, false},
		{"INT8 per-channel", 0, true},
		{"bf16", 0, false},
	}
	const name = "layers.1.mlp.up_proj.weight"
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			m := codecMatrix(t, c.format, c.rank, c.rot)
			facts, ts, err := EncodeMatrix(name, m)
			if err != nil {
				t.Fatal(err)
			}
			if facts.Format != c.format || facts.Shape != [2]int{24, 64} || facts.Rank != c.rank || facts.Raw || (facts.Rotation != nil) != c.rot {
				t.Errorf("facts %+v", facts)
			}
			if c.rot && *facts.Rotation != (RotationEntry{Kind: "hadamard", Seed: 1003, Block: 64}) {
				t.Errorf("rotation %+v", *facts.Rotation)
			}
			it, _ := itemOf(name, facts)
			want, _ := tensorsOf(it)
			if len(ts) != len(want) {
				t.Fatalf("%d tensors, the layout has %d", len(ts), len(want))
			}
			for i, tt := range ts {
				if tt.Name != want[i].Name || tt.DType != want[i].DType || !slices.Equal(tt.Shape, want[i].Shape) ||
					int64(len(tt.Data)) != int64(want[i].NumElements())*int64(want[i].DType.Size()) {
					t.Errorf("tensor %d: %s %v %v (%d bytes), layout %s %v %v", i, tt.Name, tt.DType, tt.Shape, len(tt.Data), want[i].Name, want[i].DType, want[i].Shape)
				}
				if c.format != "bf16" && !strings.HasPrefix(tt.Name, Key(name)+".") {
					t.Errorf("tensor %q is not under the key %q", tt.Name, Key(name))
				}
			}
			path := filepath.Join(t.TempDir(), "m.safetensors")
			if err := safetensors.WriteFile(path, ts, nil); err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := DecodeMatrix(name, facts, f)
			if err != nil {
				t.Fatal(err)
			}
			_, again, _ := EncodeMatrix(name, got)
			for i := range ts {
				if !bytes.Equal(again[i].Data, ts[i].Data) {
					t.Errorf("tensor %s differs after the round trip", ts[i].Name)
				}
			}
			if got.Rank() != m.Rank() || got.Format() != m.Format() || (got.Parts().Rotation != nil) != c.rot {
				t.Errorf("decoded %s rank %d rotation %v", got.Format(), got.Rank(), got.Parts().Rotation)
			}
		})
	}
}

type otherRotation struct{}

func (otherRotation) Rotate(dst, x *tensor.Matrix) { copy(dst.Data, x.Data) }

// TestCodecRefusals: a rotation that is not a lut.Hadamard cannot be
// encoded; decoding refuses raw facts, a rotation block that is not
// lut.NewHadamard's, a missing array and an array of the wrong size,
// naming the matrix.
func TestCodecRefusals(t *testing.T) {
	const name = "layers.0.mlp.down_proj.weight"
	m := codecMatrix(t, "LUT4 per-tensor + pcs", 0, true)
	p := m.Parts()
	p.Rotation = otherRotation{}
	foreign, err := lut.New(m.Format(), 24, 64, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := EncodeMatrix(name, foreign); err == nil || !strings.Contains(err.Error(), "only lut.Hadamard") {
		t.Errorf("foreign rotation: %v", err)
	}
	facts, ts, err := EncodeMatrix(name, m)
	if err != nil {
		t.Fatal(err)
	}
	src := func(ts []safetensors.Tensor) *safetensors.File {
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := safetensors.WriteFile(path, ts, nil); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	good := src(ts)
	raw, block := facts, facts
	raw.Raw = true
	rot := *facts.Rotation
	rot.Block = 32
	block.Rotation = &rot
	short := slices.Clone(ts)
	short[1].Data, short[1].Shape = short[1].Data[:len(short[1].Data)-2], []int{len(short[1].Data) - 2}
	cases := []struct {
		name  string
		facts Facts
		src   Arrays
		want  string
	}{
		{"raw", raw, good, "not a lut format"},
		{"rotation block", block, good, "rotation \"hadamard\" with 32-wide blocks, want \"hadamard\" with 64"},
		{"missing array", facts, src(ts[1:]), Key(name) + ".lut"},
		{"short array", facts, src(short), "arrays do not match"},
	}
	for _, c := range cases {
		_, err := DecodeMatrix(name, c.facts, c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming %q and the matrix", c.name, err, c.want)
		}
	}
}
