package checkpoint_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// writerTensors declares the fixture model's tensors with mixed dtypes:
// matrices BF16, every third vector F16, the others F32.
func writerTensors(t *testing.T, cfgJSON []byte) []checkpoint.Tensor {
	t.Helper()
	cfg, err := checkpoint.ParseConfig(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	var out []checkpoint.Tensor
	for i, s := range model.Tensors(&cfg) {
		dt := safetensors.F32
		switch {
		case s.Matrix:
			dt = safetensors.BF16
		case i%3 == 0:
			dt = safetensors.F16
		}
		out = append(out, checkpoint.Tensor{Name: s.Name, DType: dt, Shape: s.Shape})
	}
	return out
}

// values are tensor i's values before rounding: small, distinct, and not
// representable in a half, so rounding shows.
func values(i int, t checkpoint.Tensor) []float32 {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	v := make([]float32, n)
	for j := range v {
		v[j] = float32(math.Sin(float64(i*7919+j)) * 0.3)
	}
	return v
}

// rounded is what a tensor of dtype dt holds for v.
func rounded(v []float32, dt safetensors.DType) []float32 {
	out := slices.Clone(v)
	h := make([]uint16, len(v))
	switch dt {
	case safetensors.BF16:
		tensor.F32ToBF16Slice(h, v)
		tensor.BF16ToF32Slice(out, h)
	case safetensors.F16:
		tensor.F32ToF16Slice(h, v)
		tensor.F16ToF32Slice(out, h)
	}
	return out
}

// encode is v in dtype dt, little-endian.
func encode(v []float32, dt safetensors.DType) []byte {
	out := make([]byte, len(v)*dt.Size())
	h := make([]uint16, len(v))
	switch dt {
	case safetensors.F32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return out
	case safetensors.BF16:
		tensor.F32ToBF16Slice(h, v)
	default:
		tensor.F32ToF16Slice(h, v)
	}
	for i, x := range h {
		binary.LittleEndian.PutUint16(out[2*i:], x)
	}
	return out
}

// TestWriterRoundTrip streams the fixture model's tensors through every
// write method (raw bytes in odd-sized pieces, values spanning several
// tensors in one call, values stored in another dtype) into shards of
// 1 MiB, and reads back exactly the declared tensors: each holds its
// values rounded once to its dtype (converted F32 → BF16 once, BF16 → F32
// exactly), under the nested config's names, in shards with an index that
// checkpoint.Open accepts, with progress reported once per tensor.
func TestWriterRoundTrip(t *testing.T) {
	cfg := fixtureConfig(t)
	ts := writerTensors(t, cfg)
	out := filepath.Join(t.TempDir(), "ck")
	var calls []int64
	var total int64
	w, err := checkpoint.Create(context.Background(), out, cfg, ts, checkpoint.WriterOptions{ShardSize: 1 << 20, Version: "test",
		Progress: func(d, tot int64) { calls, total = append(calls, d), tot }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.WriteFile("tokenizer.json", []byte(`{"x": 1}`)); err != nil {
		t.Fatal(err)
	}
	want := make([][]float32, len(ts))
	var span []float32 // values of tensors [n/4, n/2), written in one call
	for i, tn := range ts {
		v := values(i, tn)
		want[i] = rounded(v, tn.DType)
		if i >= len(ts)/4 && i < len(ts)/2 {
			span = append(span, v...)
			if i == len(ts)/2-1 {
				err = w.WriteFloat32(span)
			}
		} else {
			switch i % 3 {
			case 0: // raw bytes in pieces of 999 bytes
				raw := encode(v, tn.DType)
				for len(raw) > 0 && err == nil {
					n := min(len(raw), 999)
					_, err = w.Write(raw[:n])
					raw = raw[n:]
				}
			case 1: // stored as F32 elsewhere: rounded once
				err = w.WriteConverted(safetensors.F32, encode(v, safetensors.F32))
			case 2: // stored as BF16 elsewhere: copied or converted from BF16
				want[i] = rounded(rounded(v, safetensors.BF16), tn.DType)
				err = w.WriteConverted(safetensors.BF16, encode(v, safetensors.BF16))
			}
		}
		if err != nil {
			t.Fatalf("tensor %d %s: %v", i, tn.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(ts) || calls[len(calls)-1] != total || !slices.IsSorted(calls) {
		t.Errorf("progress: %d calls for %d tensors, last %v of %d", len(calls), len(ts), calls[len(calls)-1:], total)
	}
	ck, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for i, tn := range ts {
		got, err := ck.Vector(tn.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(got, want[i]) {
			t.Errorf("tensor %s: values differ", tn.Name)
		}
	}
	if shards := checkLayout(t, out, "model.language_model.", len(ts)); shards < 3 {
		t.Errorf("%d shards of 1 MiB", shards)
	}
	if m, ok := outpath.ReadMarker(out); !ok || m.Kind != "checkpoint" || !slices.Contains(m.Files, "tokenizer.json") {
		t.Errorf("marker %+v", m)
	}
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Error("OUT.partial left behind")
	}
}

// checkLayout checks a sharded checkpoint: model-0000k-of-0000n names,
// the index mapping every tensor to the shard that holds it, metadata
// {"format": "pt"}, and names under prefix.
func checkLayout(t *testing.T, dir, prefix string, n int) (shards int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var index struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, checkpoint.IndexName))
	if err != nil || json.Unmarshal(raw, &index) != nil {
		t.Fatalf("index: %v", err)
	}
	var size int64
	names := 0
	for k, p := range paths {
		if want := filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(paths))); p != want {
			t.Errorf("shard %s, want %s", p, want)
		}
		f, err := safetensors.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if md := f.Metadata(); len(md) != 1 || md["format"] != "pt" {
			t.Errorf("%s: metadata %v", p, md)
		}
		for _, name := range f.Names() {
			info, _ := f.Info(name)
			size += info.End - info.Begin
			names++
			if index.WeightMap[name] != filepath.Base(p) {
				t.Errorf("index maps %s to %q, it is in %s", name, index.WeightMap[name], filepath.Base(p))
			}
			if name != "lm_head.weight" && (!strings.HasPrefix(name, prefix) || strings.HasPrefix(name[len(prefix):], "language_model.")) {
				t.Errorf("tensor %q: want the prefix %q", name, prefix)
			}
		}
		f.Close()
	}
	if names != n || len(index.WeightMap) != n || index.Metadata["total_size"] != size {
		t.Errorf("%d tensors in the shards, %d in the index, want %d; total_size %d, shards hold %d", names, len(index.WeightMap), n, index.Metadata["total_size"], size)
	}
	return len(paths)
}

// writeAll writes every declared tensor's values.
func writeAll(t *testing.T, w *checkpoint.Writer, ts []checkpoint.Tensor) {
	t.Helper()
	for i, tn := range ts {
		if err := w.WriteFloat32(values(i, tn)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterLayouts: data that fits one shard is one model.safetensors
// without an index, unless Indexed; a flat (text-only) config gets the
// "model." prefix.
func TestWriterLayouts(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     []byte
		indexed bool
		prefix  string
	}{
		{"single", fixtureConfig(t), false, "model.language_model."},
		{"indexed", fixtureConfig(t), true, "model.language_model."},
		{"flat", flatConfig(t, nil), true, "model."},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := writerTensors(t, c.cfg)
			out := filepath.Join(t.TempDir(), "ck")
			w, err := checkpoint.Create(context.Background(), out, c.cfg, ts, checkpoint.WriterOptions{Indexed: c.indexed})
			if err != nil {
				t.Fatal(err)
			}
			writeAll(t, w, ts)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if c.indexed {
				checkLayout(t, out, c.prefix, len(ts))
				return
			}
			ents, _ := os.ReadDir(out)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{outpath.MarkerName, "config.json", "model.safetensors"}) {
				t.Errorf("files %v", names)
			}
		})
	}
}

// TestWriterFailures: a writer used wrongly, cancelled or aborted fails
// with an error saying why and leaves neither OUT nor OUT.partial; an
// output forge did not write is refused before anything is created.
func TestWriterFailures(t *testing.T) {
	cfg := fixtureConfig(t)
	ts := writerTensors(t, cfg)
	nothingLeft := func(t *testing.T, out string) {
		t.Helper()
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*"))
		if len(left) != 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	cases := []struct {
		name, want string
		run        func(w *checkpoint.Writer) error
	}{
		{"closed early", "closed after", func(w *checkpoint.Writer) error {
			w.WriteFloat32(values(0, ts[0]))
			return w.Close()
		}},
		{"past the end", "passes the end", func(w *checkpoint.Writer) error {
			writeAll(t, w, ts)
			_, err := w.Write([]byte{0, 0})
			return err
		}},
		{"inside an element", "inside", func(w *checkpoint.Writer) error {
			w.Write([]byte{1})
			return w.WriteFloat32([]float32{1})
		}},
		{"a weight file name", "not a name", func(w *checkpoint.Writer) error { return w.WriteFile("model.safetensors", nil) }},
		{"a path", "not a name", func(w *checkpoint.Writer) error { return w.WriteFile("../x.json", nil) }},
		{"aborted", "closed", func(w *checkpoint.Writer) error {
			w.Abort()
			return w.WriteFloat32(values(0, ts[0]))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ck")
			w, err := checkpoint.Create(context.Background(), out, cfg, ts, checkpoint.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = c.run(w)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if err := w.Close(); err == nil {
				t.Fatal("Close after a failure succeeded")
			}
			nothingLeft(t, out)
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		out := filepath.Join(t.TempDir(), "ck")
		w, err := checkpoint.Create(ctx, out, cfg, ts, checkpoint.WriterOptions{ShardSize: 1 << 20,
			Progress: func(done, total int64) {
				if done > total/2 {
					cancel()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		for i, tn := range ts {
			if err = w.WriteFloat32(values(i, tn)); err != nil {
				break
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v after cancel", err)
		}
		if err := w.Close(); !errors.Is(err, context.Canceled) {
			t.Errorf("Close: %v", err)
		}
		nothingLeft(t, out)
	})
	t.Run("declarations", func(t *testing.T) {
		for _, bad := range [][]checkpoint.Tensor{
			{{Name: "a", DType: safetensors.I32, Shape: []int{2}}},
			{{Name: "a", DType: safetensors.F32, Shape: []int{2}}, {Name: "a", DType: safetensors.F32, Shape: []int{2}}},
			{{Name: "a", DType: safetensors.F32, Shape: []int{-1}}},
			{{Name: "a", DType: safetensors.F32, Shape: []int{1 << 40, 1 << 40}}},
		} {
			out := filepath.Join(t.TempDir(), "ck")
			if _, err := checkpoint.Create(context.Background(), out, cfg, bad, checkpoint.WriterOptions{}); err == nil {
				t.Errorf("%v accepted", bad)
			}
			nothingLeft(t, out)
		}
	})
	t.Run("no room", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ck")
		huge := []checkpoint.Tensor{{Name: "embed_tokens.weight", DType: safetensors.F32, Shape: []int{1 << 30, 1 << 22}}} // 16 PiB
		_, err := checkpoint.Create(context.Background(), out, cfg, huge, checkpoint.WriterOptions{})
		if !errors.Is(err, budget.ErrTooLarge) {
			t.Errorf("error %v, want budget.ErrTooLarge", err)
		}
		nothingLeft(t, out)
	})
}

// TestWriterOutputs: an existing output is replaced only with Overwrite
// and only when forge wrote it; a leftover OUT.partial of the user's is
// refused, forge's own is replaced.
func TestWriterOutputs(t *testing.T) {
	cfg := fixtureConfig(t)
	ts := writerTensors(t, cfg)
	dir := t.TempDir()
	write := func(out string, opt checkpoint.WriterOptions) error {
		w, err := checkpoint.Create(context.Background(), out, cfg, ts, opt)
		if err != nil {
			return err
		}
		writeAll(t, w, ts)
		return w.Close()
	}
	own := filepath.Join(dir, "own")
	if err := write(own, checkpoint.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := write(own, checkpoint.WriterOptions{}); !errors.Is(err, outpath.ErrExists) {
		t.Errorf("over an existing output: %v", err)
	}
	if err := write(own, checkpoint.WriterOptions{Overwrite: true}); err != nil {
		t.Errorf("over forge's own output with Overwrite: %v", err)
	}
	user := filepath.Join(dir, "user")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, "thesis.tex"), []byte("mine"), 0o644)
	if err := write(user, checkpoint.WriterOptions{Overwrite: true}); !errors.Is(err, outpath.ErrNotOwned) {
		t.Errorf("over the user's directory: %v", err)
	}
	partial := filepath.Join(dir, "p")
	os.Mkdir(partial+".partial", 0o755)
	os.WriteFile(filepath.Join(partial+".partial", "keep.txt"), []byte("mine"), 0o644)
	if err := write(partial, checkpoint.WriterOptions{}); !errors.Is(err, outpath.ErrNotOwned) {
		t.Errorf("over the user's OUT.partial: %v", err)
	}
	for _, p := range []string{filepath.Join(user, "thesis.tex"), filepath.Join(partial+".partial", "keep.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the user's file was touched: %v", err)
		}
	}
}
