package safetensors

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// fuzzSeeds returns valid small files and hand-made near-misses.
func fuzzSeeds() [][]byte {
	rng := rand.New(rand.NewPCG(13, 14))
	var seeds [][]byte
	ts := sampleTensors(rng)
	for k := 0; k <= len(ts); k += 3 {
		infos, data := tensorInfos(ts[:k])
		hdr, err := encodeHeader("seed", infos, map[string]string{"format": "pt"})
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, append(hdr, data...))
	}
	seeds = append(seeds,
		rawFile(`{}`, 0),
		rawFile(`{"__metadata__":null,`+f32a+`}   `, 4),
		rawFile(`{"a":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,20]}}`, 24),
		rawFile(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}}`, 6),
		rawFile(`{`+f32a+`,`+f32a+`}`, 4),
		rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}}`, 1),
		withLength(1<<40, "{}"),
	)
	return seeds
}

// tensorInfos lays ts out packed and returns the infos and their data.
func tensorInfos(ts []Tensor) ([]TensorInfo, []byte) {
	infos := make([]TensorInfo, len(ts))
	var data []byte
	for i, t := range ts {
		infos[i] = TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape,
			Begin: int64(len(data)), End: int64(len(data) + len(t.Data))}
		data = append(data, t.Data...)
	}
	return infos, data
}

// FuzzOpenBytes checks that no input panics, that every file that opens
// serves each tensor with its declared size through every applicable
// accessor, and that re-encoding an opened file gives the same tensors.
func FuzzOpenBytes(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := OpenBytes("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		var ts []Tensor
		for _, name := range file.Names() {
			info, _ := file.Info(name)
			b, err := file.Bytes(name)
			want := info.NumElements() * info.DType.Size()
			if err != nil || len(b) != want || int64(want) != info.End-info.Begin {
				t.Fatalf("%q: %d bytes, %v; info %+v", name, len(b), err, info)
			}
			checkAccessors(t, file, info)
			ts = append(ts, Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
		}
		reencode(t, file, ts)
	})
}

// checkAccessors checks the typed accessors' lengths and dtype errors.
func checkAccessors(t *testing.T, file *File, info TensorInfo) {
	n := info.NumElements()
	isFloat := info.DType == BF16 || info.DType == F16 || info.DType == F32
	if v, err := file.Float32(info.Name); isFloat != (err == nil) || isFloat && len(v) != n {
		t.Fatalf("%q (%v): Float32 gave %d values, %v", info.Name, info.DType, len(v), err)
	}
	isHalf := info.DType == BF16 || info.DType == F16
	if v, err := file.Uint16(info.Name); isHalf != (err == nil) || isHalf && len(v) != n {
		t.Fatalf("%q (%v): Uint16 gave %d values, %v", info.Name, info.DType, len(v), err)
	}
	if v, err := file.Int32(info.Name); (info.DType == I32) != (err == nil) || err == nil && len(v) != n {
		t.Fatalf("%q (%v): Int32 gave %d values, %v", info.Name, info.DType, len(v), err)
	}
}

// reencode writes ts with the writer's header encoding, reopens the result
// and checks that nothing changed but the offsets.
func reencode(t *testing.T, file *File, ts []Tensor) {
	infos, data := tensorInfos(ts)
	hdr, err := encodeHeader("re", infos, file.Metadata())
	if err != nil {
		t.Fatalf("re-encoding an opened file: %v", err)
	}
	again, err := OpenBytes("re", append(hdr, data...))
	if err != nil {
		t.Fatalf("re-encoded file does not open: %v\nheader %q", err, hdr)
	}
	if !slices.Equal(again.Names(), file.Names()) || !maps.Equal(again.Metadata(), file.Metadata()) {
		t.Fatalf("re-encoded names %q meta %v; want %q %v", again.Names(), again.Metadata(), file.Names(), file.Metadata())
	}
	for _, want := range ts {
		got, _ := again.Info(want.Name)
		b, _ := again.Bytes(want.Name)
		if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(b, want.Data) {
			t.Fatalf("%q changed: %+v", want.Name, got)
		}
	}
}

// TestFuzzSeeds runs the fuzz seeds' property checks as a plain test, so the
// re-encoding path is covered without -fuzz.
func TestFuzzSeedsOpen(t *testing.T) {
	opened := 0
	for _, s := range fuzzSeeds() {
		if _, err := OpenBytes("seed", s); err == nil {
			opened++
		}
	}
	if opened < 5 {
		t.Errorf("only %d seeds open; the fuzzer needs valid starting points", opened)
	}
}
