package bundle

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"forge/lut"
	"forge/safetensors"
	"forge/tensor"
)

// numpySigned is h with numpy's signs for the same seed.
func numpySigned(h *lut.Hadamard) *lut.Hadamard {
	return lut.NewHadamardSigns(h.Width(), h.Seed(), lut.SignsNumpy)
}

// TestCodecSigns: a rotation with forge's signs is recorded exactly as
// before the sign source existed (no "signs" key: forge's bundles keep
// their bytes); one with numpy's records "signs": "numpy" and decodes,
// from a mapped file, to a matrix with numpy's signs that computes what
// the encoded one does, bit for bit, and not what forge's signs give.
func TestCodecSigns(t *testing.T) {
	const name = "layers.0.mlp.down_proj.weight"
	m := codecMatrix(t, "LUT4 per-tensor + pcs", 0, true)
	facts, _, err := EncodeMatrix(name, m)
	if err != nil {
		t.Fatal(err)
	}
	const forge = `{"format":"LUT4 per-tensor + pcs","shape":[24,64],"rotation":{"kind":"hadamard","seed":1003,"block":64}}`
	if got := facts.encode(); got != forge {
		t.Errorf("forge's facts %s, want %s", got, forge)
	}
	p := m.Parts()
	p.Rotation = numpySigned(p.Rotation.(*lut.Hadamard))
	mn, err := lut.New(m.Format(), 24, 64, p)
	if err != nil {
		t.Fatal(err)
	}
	facts, ts, err := EncodeMatrix(name, mn)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := facts.encode(), strings.Replace(forge, `"block":64}`, `"block":64,"signs":"numpy"}`, 1); got != want {
		t.Errorf("numpy's facts %s, want %s", got, want)
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
	back, err := DecodeMatrix(name, facts, f)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := back.Parts().Rotation.(*lut.Hadamard); !ok || h.Signs() != lut.SignsNumpy || h.Seed() != 1003 {
		t.Fatalf("decoded rotation %v", back.Parts().Rotation)
	}
	x := tensor.New(3, 64)
	for i := range x.Data {
		x.Data[i] = float32(math.Sin(float64(i)))
	}
	y, yn, yf := tensor.New(3, 24), tensor.New(3, 24), tensor.New(3, 24)
	back.Mul(y, x)
	mn.Mul(yn, x)
	m.Mul(yf, x)
	same, differ := true, false
	for i := range y.Data {
		same = same && math.Float32bits(y.Data[i]) == math.Float32bits(yn.Data[i])
		differ = differ || math.Abs(float64(y.Data[i]-yf.Data[i])) > 1e-3
	}
	if !same || !differ {
		t.Errorf("decoded numpy-signed matrix: same as encoded %t, differs from forge's signs %t", same, differ)
	}
}

// TestBundleSigns: the version 1 fixture written again with numpy's signs
// on its MLP rotations records "signs": "numpy" in forge.json and in the
// shard facts, opens with numpy-signed matrices, and computes other logits
// than with forge's signs (they are used); written again from itself it
// keeps them, logits bit for bit. An unknown sign source is refused naming
// the bundle and the matrix: edited in forge.json alone (the shard's facts
// disagree), in both, and in a version 1 manifest (no shard facts).
func TestBundleSigns(t *testing.T) {
	dir := t.TempDir()
	forgeDir, numpyDir, again := filepath.Join(dir, "forge"), filepath.Join(dir, "numpy"), filepath.Join(dir, "again")
	reexport(t, v1Dir, forgeDir)
	reexportWith(t, v1Dir, numpyDir, numpySigned)
	reexport(t, numpyDir, again)
	toks := []int{1, 17, 200, 45, 300, 511, 0, 99}
	open := func(d string) *Bundle {
		b, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	bf, bn, ba := open(forgeDir), open(numpyDir), open(again)
	rotated := 0
	for _, e := range bn.Manifest().Matrices {
		if e.Rotation == nil {
			continue
		}
		rotated++
		m, err := bn.Matrix(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		ef, _ := bf.Entry(e.Name)
		if e.Rotation.Signs != SignsNumpy || ef.Rotation.Signs != "" || m.Parts().Rotation.(*lut.Hadamard).Signs() != lut.SignsNumpy {
			t.Fatalf("%s: rotation %+v (forge's bundle %+v), matrix signs %v", e.Name, *e.Rotation, *ef.Rotation, m.Parts().Rotation.(*lut.Hadamard).Signs())
		}
		if facts := bn.files[0].Metadata()[metaMatrixPrefix+e.Name]; !strings.Contains(facts, `"signs":"numpy"`) {
			t.Fatalf("%s: shard facts %s", e.Name, facts)
		}
	}
	if rotated != 24 { // gate, up and down of 8 layers
		t.Errorf("%d rotated matrices, want 24", rotated)
	}
	lf, ln, la := logits(t, bf, toks), logits(t, bn, toks), logits(t, ba, toks)
	var d float64
	for i := range lf {
		d = max(d, math.Abs(float64(lf[i]-ln[i])))
		if math.Float32bits(ln[i]) != math.Float32bits(la[i]) {
			t.Fatalf("logit %d: %v written again, %v", i, la[i], ln[i])
		}
	}
	t.Logf("max |Δ logit| forge's vs numpy's signs: %.3g", d)
	if d < 1e-2 { // a wrong rotation seed moves them by up to 3.4 (TestV1)
		t.Errorf("numpy's signs change the logits by only %.3g: are they used?", d)
	}

	const refused = `rotation signs "pcg64": not a sign generator this forge knows`
	edit := func(m *Manifest) { entry(t, m, upProj).Rotation.Signs = "pcg64" }
	for _, reseal := range []bool{false, true} {
		d := filepath.Join(t.TempDir(), "b")
		copyDir(t, numpyDir, d)
		rewriteManifest(t, d, reseal, edit)
		openFails(t, d, `bundle `+d+`: forge.json: matrix "`+upProj+`": rotation signs "pcg64", the shard `+shard1+` says "numpy"`)
	}
	both := filepath.Join(t.TempDir(), "b")
	copyDir(t, numpyDir, both)
	rewriteShard(t, both, shard1, func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor {
		k := metaMatrixPrefix + upProj
		meta[k] = strings.Replace(meta[k], `"signs":"numpy"`, `"signs":"pcg64"`, 1)
		return ts
	})
	rewriteManifest(t, both, true, edit)
	openFails(t, both, `bundle `+both+`: forge.json: matrix "`+upProj+`": `+refused)
	v1 := filepath.Join(t.TempDir(), "v1")
	copyDir(t, v1Dir, v1)
	rewriteManifest(t, v1, false, edit)
	openFails(t, v1, `bundle `+v1+`: forge.json: matrix "`+upProj+`": `+refused)
}
