package safetensors

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkOpen measures Open + Close of a file with 1000 small tensors:
// the cost is the mmap and the header parse.
func BenchmarkOpen(b *testing.B) {
	ts := make([]Tensor, 1000)
	for i := range ts {
		ts[i] = Tensor{Name: fmt.Sprintf("model.layers.%d.mlp.weight", i), DType: BF16,
			Shape: []int{16, 8}, Data: make([]byte, 256)}
	}
	path := filepath.Join(b.TempDir(), "many.safetensors")
	if err := WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkFloat32BF16 measures widening a 16 MiB BF16 tensor; SetBytes
// counts the bytes read, so the MB/s column is input bandwidth.
func BenchmarkFloat32BF16(b *testing.B) {
	const size = 16 << 20
	rng := rand.New(rand.NewPCG(15, 16))
	path := filepath.Join(b.TempDir(), "big.safetensors")
	ts := []Tensor{{Name: "w", DType: BF16, Shape: []int{size / 2}, Data: randomBytes(rng, size)}}
	if err := WriteFile(path, ts, nil); err != nil {
		b.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(size)
	for b.Loop() {
		if _, err := f.Float32("w"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFloat32BF16 measures rounding and writing 16 MiB of BF16
// (from 32 MiB of float32) including the final fsync.
func BenchmarkWriteFloat32BF16(b *testing.B) {
	const n = 8 << 20
	vals := make([]float32, n)
	rng := rand.New(rand.NewPCG(17, 18))
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	path := filepath.Join(b.TempDir(), "w.safetensors")
	infos := []TensorInfo{{Name: "w", DType: BF16, Shape: []int{n}}}
	b.SetBytes(2 * n)
	for b.Loop() {
		w, err := Create(path, infos, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.WriteFloat32("w", vals); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
