package bundle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/internal/outpath"
	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/safetensors"
	"forge/tensor"
)

var tinyDir = filepath.Join("..", "models", "forge-tiny")

// export writes forge-tiny as a bundle with every quantizable matrix (MLP,
// DeltaNet projections but a/b, attention, head) in format f, by RTN.
func export(t testing.TB, out string, f lut.Format, opt WriteOptions) error {
	t.Helper()
	ck, err := checkpoint.Open(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	var items []Item
	for _, ti := range ck.Tensors() {
		it := Item{Name: ti.Spec.Name, Shape: ti.Spec.Shape, DType: ti.DType, Matrix: ti.Spec.Matrix}
		if ti.Spec.Matrix && ti.Spec.Part != model.PartEmbed && !strings.Contains(ti.Spec.Name, "in_proj_a") && !strings.Contains(ti.Spec.Name, "in_proj_b") {
			it.Format = f
		}
		items = append(items, it)
	}
	opt.SourceDir = tinyDir
	opt.Manifest.Quant = QuantInfo{Method: "rtn", Format: f.String()}
	w, err := Create(out, items, opt)
	if err != nil {
		return err
	}
	defer w.Abort()
	for i, it := range items {
		if it.Format.Kind == 0 {
			raw, err := ck.Raw(it.Name)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Raw(it.Name, raw); err != nil {
				return err
			}
			continue
		}
		v, _ := ck.Vector(it.Name)
		// Small k-means budgets: the codebook's quality is not what these
		// tests check, and the reference setting takes minutes on 2 cores.
		q, err := quant.RTN(tensor.FromSlice(it.Shape[0], it.Shape[1], v), f, quant.Options{Seed: uint64(i), MaxSamples: 8000, Inits: 1, MaxIter: 20})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Matrix(it.Name, q); err != nil {
			return err
		}
	}
	return w.Close()
}

// dequantized is a Source that serves a bundle's matrices as dense fp32
// copies of Ŵ: the same model computed without the LUT kernels.
type dequantized struct{ *Bundle }

func (d dequantized) Linear(name string) (model.Linear, error) {
	m, err := d.Bundle.Matrix(name)
	if err != nil || m == nil {
		return d.Bundle.Linear(name)
	}
	out, in := m.Dims()
	w := tensor.New(out, in)
	m.Dequantize(w)
	return tensor.DenseF32(out, in, w.Data), nil
}

func logits(t *testing.T, src model.Source, toks []int) []float32 {
	t.Helper()
	m, err := model.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), m.Forward(m.NewState(), toks).Data...)
}

var formats = []string{"LUT4 per-tensor + pcs", "LUT2 per-tensor + pcs", "LUT3 per-tensor + pcs", "LUT6 per-tensor + pcs",
	"LUT4 g128 + pcs", "vector 2x16 + pcs", "vector 2x64 + pcs", "INT8 per-channel", "bf16"}

// TestRoundTrip: for every format, the bundle opens, its logits equal those
// of the same model with the dequantized weights in dense fp32 (1e-4: the
// LUT kernels sum in another order than the dense ones; logits are O(10)),
// and the manifest's byte accounting equals the bytes of the arrays on disk.
func TestRoundTrip(t *testing.T) {
	toks := []int{1116, 2239, 275, 1030, 1182, 197, 3121, 511, 8, 99, 1000, 4000}
	for _, fs := range formats {
		t.Run(fs, func(t *testing.T) {
			f, err := lut.ParseFormat(fs)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "b")
			if err := export(t, out, f, WriteOptions{ShardSize: 2 << 20}); err != nil {
				t.Fatal(err)
			}
			b, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			got, want := logits(t, b, toks), logits(t, dequantized{b}, toks)
			var d float64
			for i := range got {
				d = max(d, math.Abs(float64(got[i]-want[i])))
			}
			if d > 1e-4 {
				t.Errorf("bundle vs dequantized logits: max |Δ| = %.3g", d)
			}
			checkAccounting(t, b)
			checkAligned(t, b)
		})
	}
}

// checkAligned: every index array starts on a cache line of its file
// (safetensors.DataAlign), padded by a ".pad" tensor where needed.
func checkAligned(t *testing.T, b *Bundle) {
	t.Helper()
	for _, sf := range b.files {
		raw, err := os.ReadFile(sf.Path())
		if err != nil {
			t.Fatal(err)
		}
		area := 8 + int64(binary.LittleEndian.Uint64(raw))
		for _, n := range sf.Names() {
			if info, _ := sf.Info(n); strings.HasSuffix(n, ".idx") && (area+info.Begin)%safetensors.DataAlign != 0 {
				t.Errorf("%s: tensor %q starts at byte %d of the file", filepath.Base(sf.Path()), n, area+info.Begin)
			}
		}
	}
}

// checkAccounting: each matrix's recorded bytes = the spans of its arrays.
func checkAccounting(t *testing.T, b *Bundle) {
	t.Helper()
	for _, e := range b.Manifest().Matrices {
		var onDisk int64
		names := []string{e.Name}
		if f, err := lut.ParseFormat(e.Format); err == nil && f.Quantized() {
			k := Key(e.Name)
			names = []string{k + ".lut", k + ".idx", k + ".scale", k + ".lr_a", k + ".lr_b"}
		}
		for _, n := range names {
			if sf, ok := b.tensors[n]; ok {
				info, _ := sf.Info(n)
				onDisk += info.End - info.Begin
			}
		}
		if onDisk != e.Bytes {
			t.Errorf("%s: manifest %d bytes, on disk %d", e.Name, e.Bytes, onDisk)
		}
	}
}

// TestHostile: a bundle with a missing manifest, a truncated, corrupted or
// missing file, or a manifest that lies about a format does not open, and
// the error names the file and the problem.
func TestHostile(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	if err := export(t, good, lut.LUT4, WriteOptions{ShardSize: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	shard := "model-00001-of-00003.safetensors"
	cases := []struct {
		name, want string
		edit       func(dir string)
	}{
		{"no manifest", "no forge.json", func(d string) { os.Remove(filepath.Join(d, ManifestName)) }},
		{"truncated shard", shard + " is", func(d string) { os.Truncate(filepath.Join(d, shard), 1000) }},
		{"flipped byte", shard + " has SHA-256", func(d string) { flip(t, filepath.Join(d, shard), 5000) }},
		{"missing shard", shard, func(d string) { os.Remove(filepath.Join(d, shard)) }},
		{"config edited", "config.json", func(d string) { appendTo(filepath.Join(d, "config.json"), " ") }},
		{"bad JSON", ManifestName, func(d string) { os.WriteFile(filepath.Join(d, ManifestName), []byte(`{"format_version": 2,`), 0o644) }},
		{"future version", "format_version 3", func(d string) { editManifest(t, d, `"format_version": 2`, `"format_version": 3`) }},
		{"format lie", "layers.0.mlp.gate_proj.weight", func(d string) {
			editManifest(t, d, `"name": "layers.0.mlp.gate_proj.weight",
      "format": "LUT4 per-tensor + pcs"`, `"name": "layers.0.mlp.gate_proj.weight",
      "format": "LUT2 per-tensor + pcs"`)
		}},
		{"path escape", "bad file name", func(d string) {
			editManifest(t, d, `"name": "model-00001-of-00003.safetensors"`, `"name": "../model-00001-of-00003.safetensors"`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			copyDir(t, good, dir)
			c.edit(dir)
			b, err := Open(dir)
			if err == nil {
				b.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

// failingShard fails once more than limit bytes were given, like a disk
// that fills up mid-shard.
type failingShard struct {
	shardWriter
	left int
}

var errDiskFull = errors.New("no space left on device (injected)")

func (f *failingShard) Write(p []byte) (int, error) {
	if f.left -= len(p); f.left < 0 {
		return 0, errDiskFull
	}
	return f.shardWriter.Write(p)
}

// TestInterrupted: an export that fails in the first, middle or last shard
// (a full disk) leaves no bundle and no partial directory, and rerunning it
// produces a bundle that opens; a leftover partial directory is replaced;
// an existing bundle is not overwritten unless asked.
func TestInterrupted(t *testing.T) {
	orig := createShard
	defer func() { createShard = orig }()
	for _, failAt := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("disk full in shard %d", failAt), func(t *testing.T) {
			n := 0
			createShard = func(path string, infos []safetensors.TensorInfo, meta map[string]string) (shardWriter, error) {
				w, err := orig(path, infos, meta)
				if err != nil {
					return nil, err
				}
				defer func() { n++ }()
				if n == failAt {
					return &failingShard{w, 300_000}, nil
				}
				return w, nil
			}
			out := filepath.Join(t.TempDir(), "b")
			err := export(t, out, lut.LUT4, WriteOptions{ShardSize: 2 << 20})
			if !errors.Is(err, errDiskFull) {
				t.Fatalf("export error %v, want the injected one", err)
			}
			assertAbsent(t, out)
			createShard = orig
			if err := export(t, out, lut.LUT4, WriteOptions{ShardSize: 2 << 20}); err != nil {
				t.Fatal(err)
			}
			b, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
		})
	}
	t.Run("leftover partial directory", func(t *testing.T) {
		// An export killed before it could clean up (its marker names a
		// process that is gone) is replaced by the next one.
		out := filepath.Join(t.TempDir(), "b")
		if err := outpath.MakeDir(out+".partial", PartialKind, "test"); err != nil {
			t.Fatal(err)
		}
		outpath.WriteMarker(out+".partial", outpath.Marker{Kind: PartialKind, PID: deadPID(t)})
		os.WriteFile(filepath.Join(out+".partial", "model-00001-of-00003.safetensors"), []byte("junk"), 0o644)
		if err := export(t, out, lut.LUT4, WriteOptions{ShardSize: 2 << 20}); err != nil {
			t.Fatal(err)
		}
		b, err := Open(out)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
			t.Error("partial directory left behind")
		}
	})
	t.Run("foreign partial directory", func(t *testing.T) {
		// OUT.partial holding someone else's files is never removed.
		out := filepath.Join(t.TempDir(), "b")
		os.MkdirAll(out+".partial", 0o755)
		os.WriteFile(filepath.Join(out+".partial", "thesis.tex"), []byte("mine"), 0o644)
		err := export(t, out, lut.LUT4, WriteOptions{ShardSize: 2 << 20, Overwrite: true})
		if !errors.Is(err, outpath.ErrNotOwned) || !strings.Contains(err.Error(), "thesis.tex") {
			t.Errorf("err = %v, want a refusal naming thesis.tex", err)
		}
		if b, err := os.ReadFile(filepath.Join(out+".partial", "thesis.tex")); err != nil || string(b) != "mine" {
			t.Error("the foreign file was touched")
		}
	})
	t.Run("existing output", func(t *testing.T) {
		out := t.TempDir()
		if err := export(t, out, lut.LUT4, WriteOptions{}); err != nil {
			t.Fatalf("an empty directory was refused: %v", err)
		}
		if err := export(t, out, lut.LUT4, WriteOptions{}); !errors.Is(err, outpath.ErrExists) {
			t.Errorf("err = %v, want ErrExists", err)
		}
		if err := export(t, out, lut.LUT4, WriteOptions{Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		b, err := Open(out)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
		if err := export(t, out, lut.LUT4, WriteOptions{Overwrite: true}); !errors.Is(err, outpath.ErrNotOwned) {
			t.Errorf("a bundle with a foreign file was replaced: %v", err)
		}
	})
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func assertAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists after a failed export", path)
	}
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Errorf("%s.partial left behind", path)
	}
}

func flip(t *testing.T, path string, off int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x10
	os.WriteFile(path, b, 0o644)
}

func appendTo(path, s string) {
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(b, s...), 0o644)
}

func editManifest(t *testing.T, dir, old, new string) {
	p := filepath.Join(dir, ManifestName)
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), old) {
		t.Fatalf("manifest lacks %q", old)
	}
	os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

func copyDir(t *testing.T, src, dst string) {
	os.MkdirAll(dst, 0o755)
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
	}
}
