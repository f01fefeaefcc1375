package bundle

import (
	"encoding/binary"
	"encoding/json"
	"forge/internal/outpath"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
)

// v1Dir is a bundle written by format_version 1 (testdata/README.md):
// qwen35-tiny-random in LUT2 with Hadamard rotations on the MLP inputs,
// rank-4 low-rank factors on the DeltaNet and attention projections, raw
// bf16 embeddings and in_proj_a/b.
var v1Dir = filepath.Join("testdata", "v1-tiny")

// Matrices of v1Dir the tables below edit.
const (
	upProj  = "layers.0.mlp.up_proj.weight"             // LUT2, rotation hadamard seed 1000 block 256
	qkvProj = "layers.0.linear_attn.in_proj_qkv.weight" // LUT2, rank 4, no rotation
	embed   = "embed_tokens.weight"                     // raw bf16
	head    = "lm_head.weight"                          // LUT2, no rank, no rotation
	shard1  = "model-00001-of-00001.safetensors"
)

// reexport writes the bundle at src anew with this package's Writer: the
// same config, tensors, arrays and rotations, in the current layout.
func reexport(t testing.TB, src, out string) {
	t.Helper()
	reexportWith(t, src, out, nil)
}

// reexportWith is reexport with each rotated matrix (and its Item's
// rotation) replaced by rotate's, when rotate is set.
func reexportWith(t testing.TB, src, out string, rotate func(h *lut.Hadamard) *lut.Hadamard) {
	t.Helper()
	b, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var items []Item
	for _, s := range model.Tensors(&b.cfg) {
		it := Item{Name: s.Name, Shape: s.Shape, Matrix: s.Matrix}
		if e, ok := b.Entry(s.Name); ok && !e.Raw {
			it.Format, _ = lut.ParseFormat(e.Format)
			it.Rank, it.Rotation = e.Rank, e.Rotation
			if r := e.Rotation; r != nil && rotate != nil {
				h := rotate(lut.NewHadamard(s.Shape[1], r.Seed))
				it.Rotation = NewRotationEntry(h.Seed(), h.Block(), h.Signs())
			}
		} else {
			info, _ := b.tensors[s.Name].Info(s.Name)
			it.DType = info.DType
		}
		items = append(items, it)
	}
	m := b.Manifest()
	w, err := Create(out, items, WriteOptions{SourceDir: src,
		Manifest: Manifest{ForgeVersion: m.ForgeVersion, Source: m.Source, Quant: m.Quant}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, it := range items {
		var err error
		if it.Format.Kind != 0 {
			var lm *lut.Matrix
			if lm, err = b.Matrix(it.Name); err == nil && it.Rotation != nil && rotate != nil {
				p := lm.Parts()
				p.Rotation = rotate(p.Rotation.(*lut.Hadamard))
				lm, err = lut.New(lm.Format(), it.Shape[0], it.Shape[1], p)
			}
			if err == nil {
				err = w.Matrix(it.Name, lm)
			}
		} else {
			raw, _ := b.tensors[it.Name].Bytes(it.Name)
			err = w.Raw(it.Name, raw)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestV1: the version 1 bundle opens and computes the logits that the
// version 1 code computed from it: |Δ| ≤ 1e-4 on logits of magnitude up to
// 4.3 (measured: 0 in the default build, which wrote them; 7e-6 with
// GOEXPERIMENT=simd, whose kernels sum in another order; one matrix with a
// wrong rotation seed moves them by up to 3.4). Re-exported by this
// package it becomes version 2, records every matrix's facts in its shard
// and computes exactly the same logits (same arrays, same kernels).
func TestV1(t *testing.T) {
	b, err := Open(v1Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := b.Manifest().FormatVersion; v != 1 {
		t.Fatalf("fixture has format_version %d, want 1", v)
	}
	want, err := safetensors.Open(filepath.Join("testdata", "v1-tiny-logits.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	out := filepath.Join(t.TempDir(), "v2")
	reexport(t, v1Dir, out)
	b2, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if v := b2.Manifest().FormatVersion; v != 2 {
		t.Errorf("re-export has format_version %d, want 2", v)
	}
	for _, seq := range []string{"0", "1"} {
		toks32, err := want.Int32("tokens_" + seq)
		if err != nil {
			t.Fatal(err)
		}
		toks := make([]int, len(toks32))
		for i, x := range toks32 {
			toks[i] = int(x)
		}
		ref, _ := want.Float32("logits_" + seq)
		got, got2 := logits(t, b, toks), logits(t, b2, toks)
		var d float64
		for i := range got {
			d = max(d, math.Abs(float64(got[i]-ref[i])))
		}
		t.Logf("sequence %s: max abs diff %.3g", seq, d)
		if d > 1e-4 {
			t.Errorf("sequence %s: version 1 bundle vs recorded logits: max |Δ| = %.3g", seq, d)
		}
		if !slices.Equal(got, got2) {
			t.Errorf("sequence %s: re-exported bundle computes other logits", seq)
		}
	}
	meta := b2.files[0].Metadata()
	if meta[metaFormatVersion] != "2" || meta[metaFormat] != "forge" {
		t.Errorf("shard metadata %v", meta)
	}
	for _, e := range b2.Manifest().Matrices {
		f, err := decodeFacts(meta[metaMatrixPrefix+e.Name])
		if err != nil || diffFacts(factsOf(e), f, shard1) != "" {
			t.Errorf("%s: shard facts %q (%v), manifest %+v", e.Name, meta[metaMatrixPrefix+e.Name], err, factsOf(e))
		}
	}
	if e, _ := b2.Entry(upProj); e.Rotation == nil || e.Rotation.Seed != 1000 || e.Rotation.Signs != "" {
		t.Errorf("%s: rotation %+v, want seed 1000, forge's signs", upProj, e.Rotation)
	}
	for _, bb := range []*Bundle{b, b2} { // no "signs" recorded: forge's generator, as before it could be named
		m, err := bb.Matrix(upProj)
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := m.Parts().Rotation.(*lut.Hadamard); !ok || h.Signs() != lut.SignsForge {
			t.Errorf("%s: rotation %v, want forge's signs", upProj, m.Parts().Rotation)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(out, ManifestName)); strings.Contains(string(raw), `"signs"`) || strings.Contains(meta[metaMatrixPrefix+upProj], `"signs"`) {
		t.Errorf("a bundle with forge's signs records \"signs\": forge.json or shard facts %s", meta[metaMatrixPrefix+upProj])
	}
}

// entry returns the manifest entry of a matrix.
func entry(t *testing.T, m *Manifest, name string) *MatrixEntry {
	t.Helper()
	for i := range m.Matrices {
		if m.Matrices[i].Name == name {
			return &m.Matrices[i]
		}
	}
	t.Fatalf("manifest lists no %s", name)
	return nil
}

// rewriteManifest applies edit to dir/forge.json; with reseal it also
// recomputes the content hash, as an editor who knows the scheme would.
func rewriteManifest(t *testing.T, dir string, reseal bool, edit func(*Manifest)) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	if reseal {
		if m.ContentSHA256, err = m.ContentHash(); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewriteShard rewrites a shard through edit (tensor data is copied, so
// edit may change it) and updates the manifest's file hashes and content
// hash: a consistent bundle except for whatever edit did.
func rewriteShard(t *testing.T, dir, shard string, edit func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor) {
	t.Helper()
	path := filepath.Join(dir, shard)
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		raw, _ := f.Bytes(n)
		ts = append(ts, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: slices.Clone(raw)})
	}
	meta := f.Metadata()
	f.Close()
	ts = edit(ts, meta)
	if err := safetensors.WriteFile(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, dir, true, func(m *Manifest) {
		for i, fe := range m.Files {
			if m.Files[i].Bytes, m.Files[i].SHA256, err = hashFile(filepath.Join(dir, fe.Name)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// tensorData returns the data of the named tensor in ts.
func tensorData(t *testing.T, ts []safetensors.Tensor, name string) []byte {
	t.Helper()
	for _, x := range ts {
		if x.Name == name {
			return x.Data
		}
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

func openFails(t *testing.T, dir, want string) {
	t.Helper()
	b, err := Open(dir)
	if err == nil {
		b.Close()
		t.Fatalf("opened; want an error mentioning %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not mention %q", err, want)
	}
}

// TestHostileManifest: an edit of forge.json that changes what the model
// computes, or what inspect reports, is refused at Open with an error that
// names the matrix and the field, whether or not the editor also
// recomputed content_sha256 (the cross-checks catch it first either way).
func TestHostileManifest(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	reexport(t, v1Dir, good)
	cases := []struct {
		name, want string
		edit       func(m *Manifest)
	}{
		{"rotation seed changed", `matrix "` + upProj + `": rotation seed 1001, the shard ` + shard1 + ` says 1000`,
			func(m *Manifest) { entry(t, m, upProj).Rotation.Seed = 1001 }},
		{"rotation removed", `matrix "` + upProj + `": no rotation, the shard ` + shard1 + ` says rotation hadamard seed 1000 block 256`,
			func(m *Manifest) { entry(t, m, upProj).Rotation = nil }},
		{"rotation added", `matrix "` + qkvProj + `": rotation hadamard seed 7 block 256, the shard ` + shard1 + ` says none`,
			func(m *Manifest) {
				entry(t, m, qkvProj).Rotation = &RotationEntry{Kind: "hadamard", Seed: 7, Block: 256}
			}},
		{"rotation block changed", `matrix "` + upProj + `": rotation block 128, the shard ` + shard1 + ` says 256`,
			func(m *Manifest) { entry(t, m, upProj).Rotation.Block = 128 }},
		{"format changed", `matrix "` + upProj + `": format "LUT4 per-tensor + pcs", the shard ` + shard1 + ` says "LUT2 per-tensor + pcs"`,
			func(m *Manifest) { entry(t, m, upProj).Format = "LUT4 per-tensor + pcs" }},
		{"shape changed", `matrix "` + upProj + `": shape [256 384], the shard ` + shard1 + ` says [384 256]`,
			func(m *Manifest) { entry(t, m, upProj).Shape = [2]int{256, 384} }},
		{"rank changed", `matrix "` + qkvProj + `": rank 8, the shard ` + shard1 + ` says 4`,
			func(m *Manifest) { entry(t, m, qkvProj).Rank = 8 }},
		{"rank removed", `matrix "` + qkvProj + `": rank 0, the shard ` + shard1 + ` says 4`,
			func(m *Manifest) { entry(t, m, qkvProj).Rank = 0 }},
		{"bytes changed", `matrix "` + upProj + `": bytes 12345, its format, shape and rank make 25352`,
			func(m *Manifest) { entry(t, m, upProj).Bytes = 12345 }},
		{"bpw changed", `matrix "` + upProj + `": bpw 1.5, its format, shape and rank make 2.0631510416666665`,
			func(m *Manifest) { entry(t, m, upProj).BPW = 1.5 }},
		{"matrix dropped", `forge.json does not list matrix "` + upProj + `", which the shard ` + shard1 + ` records`,
			func(m *Manifest) {
				m.Matrices = slices.DeleteFunc(m.Matrices, func(e MatrixEntry) bool { return e.Name == upProj })
			}},
		{"matrix duplicated", `matrix "` + upProj + `" is listed twice`,
			func(m *Manifest) { m.Matrices = append(m.Matrices, *entry(t, m, upProj)) }},
		{"matrix added", `matrix "layers.9.mlp.up_proj.weight": no shard records it`,
			func(m *Manifest) {
				e := *entry(t, m, upProj)
				e.Name = "layers.9.mlp.up_proj.weight"
				m.Matrices = append(m.Matrices, e)
			}},
		{"raw flag cleared", `matrix "` + embed + `": raw false, the shard ` + shard1 + ` says true`,
			func(m *Manifest) { entry(t, m, embed).Raw = false }},
		{"raw flag set", `matrix "` + head + `": raw true, the shard ` + shard1 + ` says false`,
			func(m *Manifest) { entry(t, m, head).Raw = true }},
		{"version downgraded", `format_version 1, the shard ` + shard1 + ` says 2`,
			func(m *Manifest) { m.FormatVersion, m.ContentSHA256 = 1, "" }},
	}
	for _, c := range cases {
		for _, reseal := range []bool{false, true} {
			if reseal && c.name == "version downgraded" {
				continue // version 1 has no content hash to recompute
			}
			name := c.name
			if reseal {
				name += ", content hash recomputed"
			}
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "b")
				copyDir(t, good, dir)
				rewriteManifest(t, dir, reseal, c.edit)
				openFails(t, dir, c.want)
			})
		}
	}
}

// TestContentHash: an edit of a field that does not change the model (a
// held-out SNR, the source path) is caught by content_sha256; the same
// edit with the hash recomputed opens, as does a reformatted forge.json.
func TestContentHash(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	reexport(t, v1Dir, good)
	edit := func(m *Manifest) {
		entry(t, m, head).SNR = &SNREntry{Final: 99}
		m.Source.Path = "/elsewhere"
	}
	dir := filepath.Join(t.TempDir(), "b")
	copyDir(t, good, dir)
	rewriteManifest(t, dir, false, edit)
	openFails(t, dir, "forge.json: content hash")
	rewriteManifest(t, dir, true, func(*Manifest) {})
	b, err := Open(dir)
	if err != nil {
		t.Fatalf("resealed manifest: %v", err)
	}
	b.Close()
	raw, _ := os.ReadFile(filepath.Join(good, ManifestName)) // compact: another formatting, same content
	var v any
	json.Unmarshal(raw, &v)
	compact, _ := json.Marshal(v)
	copyDir(t, good, dir)
	os.WriteFile(filepath.Join(dir, ManifestName), compact, 0o644)
	if b, err = Open(dir); err != nil {
		t.Fatalf("compacted manifest: %v", err)
	}
	b.Close()
}

// TestHostileV1: a version 1 manifest has no facts in its shards to check
// against, but the checks that need none still hold: bytes and bpw are
// recomputed, shapes come from config.json, every matrix the model needs
// must be listed and every tensor accounted for. (What version 1 cannot
// catch is an edit that keeps all of those, e.g. a rotation seed.)
func TestHostileV1(t *testing.T) {
	cases := []struct {
		name, want string
		edit       func(m *Manifest)
	}{
		{"bytes changed", `matrix "` + upProj + `": bytes 12345, its format, shape and rank make 25352`,
			func(m *Manifest) { entry(t, m, upProj).Bytes = 12345 }},
		{"bpw changed", `matrix "` + upProj + `": bpw 1.5`, func(m *Manifest) { entry(t, m, upProj).BPW = 1.5 }},
		{"format changed", `matrix "` + upProj + `": bytes 25352, its format, shape and rank make 49952`,
			func(m *Manifest) { entry(t, m, upProj).Format = "LUT4 per-tensor + pcs" }},
		{"rank changed", `matrix "` + qkvProj + `": bytes 25736, its format, shape and rank make 30344`,
			func(m *Manifest) { entry(t, m, qkvProj).Rank = 8 }},
		{"shape changed", `matrix "` + upProj + `": shape [256 384], config.json makes it [384 256]`,
			func(m *Manifest) { entry(t, m, upProj).Shape = [2]int{256, 384} }},
		{"matrix dropped", `forge.json lists no matrix "` + upProj + `", which the model (config.json) needs`,
			func(m *Manifest) {
				m.Matrices = slices.DeleteFunc(m.Matrices, func(e MatrixEntry) bool { return e.Name == upProj })
			}},
		{"matrix duplicated", `matrix "` + upProj + `" is listed twice`,
			func(m *Manifest) { m.Matrices = append(m.Matrices, *entry(t, m, upProj)) }},
		{"raw flag set", `matrix "` + head + `": raw with format "LUT2 per-tensor + pcs"`,
			func(m *Manifest) { entry(t, m, head).Raw = true }},
		{"version raised", `format_version 2 without content_sha256`, func(m *Manifest) { m.FormatVersion = 2 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			copyDir(t, v1Dir, dir)
			rewriteManifest(t, dir, false, c.edit)
			openFails(t, dir, c.want)
		})
	}
}

// TestHostileShard: shards rewritten with their hashes updated in the
// manifest (so only the cross-checks stand in the way): an edited fact in
// a shard's metadata, a tensor no matrix or vector accounts for, and a NaN
// or infinity in a scale, codebook, low-rank factor or vector are refused,
// naming the matrix and field or the tensor and the first bad element.
func TestHostileShard(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	reexport(t, v1Dir, good)
	setF16 := func(name string, i int, h uint16) func([]safetensors.Tensor, map[string]string) []safetensors.Tensor {
		return func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
			binary.LittleEndian.PutUint16(tensorData(t, ts, name)[2*i:], h)
			return ts
		}
	}
	cases := []struct {
		name, want string
		edit       func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor
	}{
		{"shard fact edited", `matrix "` + upProj + `": rotation seed 1000, the shard ` + shard1 + ` says 1001`,
			func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor {
				k := metaMatrixPrefix + upProj
				meta[k] = strings.Replace(meta[k], `"seed":1000`, `"seed":1001`, 1)
				return ts
			}},
		{"unlisted tensor", `tensor "layers.0.mlp.extra.weight" is not accounted for`,
			func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
				return append(ts, safetensors.Tensor{Name: "layers.0.mlp.extra.weight", DType: safetensors.F16, Shape: []int{2}, Data: make([]byte, 4)})
			}},
		{"padding too long", `tensor "layers.0.mlp.down_proj.pad" is not accounted for`,
			func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
				for i := range ts {
					if ts[i].Name == "layers.0.mlp.down_proj.pad" {
						ts[i].Shape, ts[i].Data = []int{64}, make([]byte, 64)
						return ts
					}
				}
				t.Fatal("no padding before layers.0.mlp.down_proj.idx")
				return nil
			}},
		{"padding of no matrix", `tensor "layers.0.mlp.extra.pad" is not accounted for`,
			func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
				return append(ts, safetensors.Tensor{Name: "layers.0.mlp.extra.pad", DType: safetensors.U8, Shape: []int{8}, Data: make([]byte, 8)})
			}},
		{"NaN scale", `tensor "layers.0.mlp.up_proj.scale": element 5 is NaN`, setF16("layers.0.mlp.up_proj.scale", 5, 0x7e00)},
		{"Inf codebook", `tensor "layers.0.mlp.up_proj.lut": element 2 is +Inf`, setF16("layers.0.mlp.up_proj.lut", 2, 0x7c00)},
		{"NaN low-rank factor", `tensor "layers.0.linear_attn.in_proj_qkv.lr_b": element 3 is NaN`, setF16("layers.0.linear_attn.in_proj_qkv.lr_b", 3, 0xfe00)},
		{"NaN vector (bf16)", `tensor "layers.0.input_layernorm.weight": element 7 is NaN`, setF16("layers.0.input_layernorm.weight", 7, 0x7fc0)},
		{"-Inf vector (bf16)", `tensor "layers.0.linear_attn.A_log": element 1 is -Inf`, setF16("layers.0.linear_attn.A_log", 1, 0xff80)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			copyDir(t, good, dir)
			rewriteShard(t, dir, shard1, c.edit)
			openFails(t, dir, c.want)
		})
	}
}

// TestMisaligned: a bundle as written has every index array on a cache
// line; the same bundle with its padding tensors removed (the layout of
// bundles written before the padding) still opens, and Misaligned counts
// the index arrays it left off a line.
func TestMisaligned(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	reexport(t, v1Dir, good)
	b, err := Open(good)
	if err != nil {
		t.Fatal(err)
	}
	n, of := b.Misaligned()
	b.Close()
	if n != 0 || of == 0 {
		t.Fatalf("a bundle as written: %d of %d index arrays misaligned, want 0 of some", n, of)
	}
	old := filepath.Join(t.TempDir(), "old")
	copyDir(t, good, old)
	pads := 0
	rewriteShard(t, old, shard1, func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
		return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool {
			if strings.HasSuffix(x.Name, ".pad") {
				pads++
				return true
			}
			return false
		})
	})
	if pads == 0 {
		t.Fatal("the bundle has no padding tensors to remove")
	}
	if b, err = Open(old); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n2, of2 := b.Misaligned()
	if of2 != of || n2 == 0 || n2 > pads {
		t.Fatalf("without its %d paddings: %d of %d index arrays misaligned, want 1…%d of %d", pads, n2, of2, pads, of)
	}
}

// TestIncomplete: a directory without forge.json that is the remains of a
// bundle is recognised, with a reason; a bundle, a Hugging Face checkpoint
// and an unrelated directory are not.
func TestIncomplete(t *testing.T) {
	root := t.TempDir()
	noManifest := filepath.Join(root, "nomanifest")
	copyDir(t, v1Dir, noManifest)
	os.Remove(filepath.Join(noManifest, ManifestName))
	partial := filepath.Join(root, "out.partial")
	os.MkdirAll(partial, 0o755)
	os.WriteFile(filepath.Join(partial, "config.json"), []byte("{}"), 0o644)
	marked := filepath.Join(root, "marked")
	if err := outpath.MakeDir(marked, PartialKind, "test"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, want string // want "" = not incomplete
	}{
		{noManifest, "its shard " + shard1 + " was written by forge"},
		{partial, "export's working directory"},
		{filepath.Join(root, "out"), "out.partial does"},
		{marked, "its marker says so"},
		{v1Dir, ""},
		{tinyDir, ""},
		{t.TempDir(), ""},
		{filepath.Join(root, "absent"), ""},
	}
	for _, c := range cases {
		reason, ok := Incomplete(c.dir)
		if ok != (c.want != "") || !strings.Contains(reason, c.want) {
			t.Errorf("Incomplete(%s) = %q, %t; want %q", c.dir, reason, ok, c.want)
		}
	}
}

// TestWriterRefusesUndeclared: the writer stores exactly what was declared:
// a matrix whose rotation differs from its Item's, or a low-rank rank on a
// format that cannot carry factors, is an error, not a silent change.
func TestWriterRefusesUndeclared(t *testing.T) {
	b, err := Open(v1Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var rotated *lut.Matrix
	var items []Item
	for _, s := range model.Tensors(&b.cfg) {
		it := Item{Name: s.Name, Shape: s.Shape, Matrix: s.Matrix}
		if e, ok := b.Entry(s.Name); ok && !e.Raw {
			it.Format, _ = lut.ParseFormat(e.Format)
			it.Rank = e.Rank
			if e.Rotation != nil && rotated == nil {
				if rotated, err = b.Matrix(s.Name); err != nil {
					t.Fatal(err)
				}
				items = []Item{it} // declared without its rotation
				break
			}
		}
	}
	if rotated == nil {
		t.Fatal("the fixture has no rotated matrix")
	}
	w, err := Create(filepath.Join(t.TempDir(), "o"), items, WriteOptions{SourceDir: v1Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Matrix(items[0].Name, rotated); err == nil || !strings.Contains(err.Error(), "declared no rotation") {
		t.Errorf("undeclared rotation: %v", err)
	}
	bad := []Item{{Name: "layers.0.mlp.up_proj.weight", Shape: []int{8, 8}, Format: lut.Format{Kind: lut.BF16}, Rank: 2}}
	if _, err := Create(filepath.Join(t.TempDir(), "o"), bad, WriteOptions{SourceDir: v1Dir}); err == nil || !strings.Contains(err.Error(), "low-rank") {
		t.Errorf("rank on bf16: %v", err)
	}
}
