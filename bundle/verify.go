package bundle

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// checkShardFacts checks each shard's format_version against the
// manifest's and, from version 2, compares the facts of every matrix in
// forge.json with those in the metadata of its shard, field by field, and
// refuses facts of a matrix forge.json does not list.
func (b *Bundle) checkShardFacts() error {
	recorded := map[string]string{} // matrix name → facts JSON
	var order []string
	for _, sf := range b.files {
		shard := filepath.Base(sf.Path())
		meta := sf.Metadata()
		v, has := meta[metaFormatVersion]
		switch {
		case b.man.FormatVersion == 1 && has:
			return fmt.Errorf("bundle %s: %s: format_version 1, the shard %s says %s", b.dir, ManifestName, shard, v)
		case b.man.FormatVersion >= 2 && v != strconv.Itoa(b.man.FormatVersion):
			return fmt.Errorf("bundle %s: %s: format_version %d, the shard %s says %q", b.dir, ManifestName, b.man.FormatVersion, shard, v)
		}
		for _, k := range slices.Sorted(maps.Keys(meta)) {
			name, ok := strings.CutPrefix(k, metaMatrixPrefix)
			if !ok {
				continue
			}
			if prev, dup := b.factsShard[name]; dup {
				return fmt.Errorf("bundle %s: matrix %q is recorded by two shards, %s and %s", b.dir, name, prev, shard)
			}
			recorded[name], b.factsShard[name] = meta[k], shard
			order = append(order, name)
		}
	}
	if b.man.FormatVersion < 2 {
		return nil
	}
	for _, e := range b.man.Matrices {
		s, ok := recorded[e.Name]
		if !ok {
			return fmt.Errorf("bundle %s: %s: matrix %q: no shard records it (added to %s?)", b.dir, ManifestName, e.Name, ManifestName)
		}
		f, err := decodeFacts(s)
		if err != nil {
			return fmt.Errorf("bundle %s: shard %s: metadata of matrix %q: %w", b.dir, b.factsShard[e.Name], e.Name, err)
		}
		if d := diffFacts(factsOf(e), f, b.factsShard[e.Name]); d != "" {
			return fmt.Errorf("bundle %s: %s: matrix %q: %s", b.dir, ManifestName, e.Name, d)
		}
	}
	for _, name := range order {
		if _, ok := b.matrices[name]; !ok {
			return fmt.Errorf("bundle %s: %s does not list matrix %q, which the shard %s records (dropped from %s?)", b.dir, ManifestName, name, b.factsShard[name], ManifestName)
		}
	}
	return nil
}

// checkAccounting checks the manifest against config.json and the shards:
// every matrix it lists is one of the model's, of the model's shape, stored
// as exactly the tensors its format, rank and raw flag call for, with the
// bytes and bits per weight they make; every matrix and vector the model
// needs is present; and every tensor in the shards belongs to one of them.
func (b *Bundle) checkAccounting() error {
	specs := model.Tensors(&b.cfg)
	matrixSpec := map[string]model.TensorSpec{}
	claimed := map[string]bool{}
	for _, s := range specs {
		if s.Matrix {
			matrixSpec[s.Name] = s
			continue
		}
		if err := b.checkVector(s); err != nil {
			return err
		}
		claimed[s.Name] = true
	}
	for _, e := range b.man.Matrices {
		names, err := b.checkMatrix(e, matrixSpec)
		if err != nil {
			return err
		}
		for _, n := range names {
			claimed[n] = true
		}
	}
	for _, s := range specs {
		if _, ok := b.matrices[s.Name]; s.Matrix && !ok {
			return fmt.Errorf("bundle %s: %s lists no matrix %q, which the model (config.json) needs", b.dir, ManifestName, s.Name)
		}
	}
	for _, sf := range b.files {
		for _, n := range sf.Names() {
			if !claimed[n] && !isPad(sf, n, claimed) {
				return fmt.Errorf("bundle %s: shard %s: tensor %q is not accounted for: no matrix in %s is stored in it and the model has no such vector", b.dir, filepath.Base(sf.Path()), n, ManifestName)
			}
		}
	}
	return nil
}

// isPad reports whether tensor n of sf is the padding before a claimed
// index array (padTensor): U8, 1–63 bytes.
func isPad(sf *safetensors.File, n string, claimed map[string]bool) bool {
	key, ok := strings.CutSuffix(n, ".pad")
	if !ok || !claimed[key+".idx"] {
		return false
	}
	info, _ := sf.Info(n)
	return info.DType == safetensors.U8 && len(info.Shape) == 1 && info.Shape[0] > 0 && info.Shape[0] < safetensors.DataAlign
}

// checkVector checks that a vector the model needs is stored as a float
// tensor of its shape.
func (b *Bundle) checkVector(s model.TensorSpec) error {
	sf, ok := b.tensors[s.Name]
	if !ok {
		return fmt.Errorf("bundle %s: no tensor %q, which the model (config.json) needs", b.dir, s.Name)
	}
	info, _ := sf.Info(s.Name)
	if !isFloat(info.DType) || !slices.Equal(info.Shape, s.Shape) {
		return fmt.Errorf("bundle %s: tensor %q is %v %v, the model needs a float of shape %v", b.dir, s.Name, info.DType, info.Shape, s.Shape)
	}
	return nil
}

// checkMatrix checks one manifest entry against the model and the shards
// and returns the names of its tensors.
func (b *Bundle) checkMatrix(e MatrixEntry, specs map[string]model.TensorSpec) ([]string, error) {
	where := fmt.Sprintf("bundle %s: %s: matrix %q", b.dir, ManifestName, e.Name)
	spec, ok := specs[e.Name]
	if !ok {
		return nil, fmt.Errorf("%s: the model (config.json) has no such matrix", where)
	}
	if want := [2]int{spec.Shape[0], spec.Shape[1]}; e.Shape != want {
		return nil, fmt.Errorf("%s: shape %v, config.json makes it %v", where, e.Shape, want)
	}
	it, err := itemOf(e.Name, factsOf(e))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	ts, err := tensorsOf(it)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w", b.dir, ManifestName, err)
	}
	want := newEntry(it)
	if e.Bytes != want.Bytes {
		return nil, fmt.Errorf("%s: bytes %d, its format, shape and rank make %d", where, e.Bytes, want.Bytes)
	}
	if e.BPW != want.BPW {
		return nil, fmt.Errorf("%s: bpw %v, its format, shape and rank make %v", where, e.BPW, want.BPW)
	}
	var names []string
	for _, t := range ts {
		sf, ok := b.tensors[t.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no tensor %q in the shards (format %q, rank %d, raw %t do not match them)", where, t.Name, e.Format, e.Rank, e.Raw)
		}
		info, _ := sf.Info(t.Name)
		if info.DType != t.DType || !slices.Equal(info.Shape, t.Shape) {
			return nil, fmt.Errorf("%s: tensor %q is %v %v, format %q makes it %v %v", where, t.Name, info.DType, info.Shape, e.Format, t.DType, t.Shape)
		}
		if shard, ok := b.factsShard[e.Name]; ok && filepath.Base(sf.Path()) != shard {
			return nil, fmt.Errorf("%s: tensor %q is in %s, the matrix's facts in %s", where, t.Name, filepath.Base(sf.Path()), shard)
		}
		names = append(names, t.Name)
	}
	return names, nil
}

func isFloat(d safetensors.DType) bool {
	return d == safetensors.BF16 || d == safetensors.F16 || d == safetensors.F32
}

// checkFinite refuses a NaN or an infinity in the small arrays that reach
// every output: the model's vectors (norms, conv taps, A_log, dt_bias) and
// each quantized matrix's codebooks, scales and low-rank factors, naming
// the tensor and the first bad element (row-major index). Dense weights
// (raw matrices such as the embeddings, bf16/fp16 matrices) are not
// scanned: they are most of the bytes, and a bad value there reaches only
// the outputs that use it (the runtime check of logits reports those).
func (b *Bundle) checkFinite() error {
	var names []string
	for _, s := range model.Tensors(&b.cfg) {
		if !s.Matrix {
			names = append(names, s.Name)
		}
	}
	for _, e := range b.man.Matrices {
		if f, err := lut.ParseFormat(e.Format); e.Raw || err != nil || !f.Quantized() {
			continue
		}
		for _, suffix := range []string{".lut", ".scale", ".lr_a", ".lr_b"} {
			if _, ok := b.tensors[Key(e.Name)+suffix]; ok {
				names = append(names, Key(e.Name)+suffix)
			}
		}
	}
	for _, n := range names {
		sf := b.tensors[n]
		info, _ := sf.Info(n)
		raw, err := sf.Bytes(n)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", b.dir, err)
		}
		if i, v := firstNonFinite(info.DType, raw); i >= 0 {
			return fmt.Errorf("bundle %s: tensor %q: element %d is %v (not finite)", b.dir, n, i, v)
		}
	}
	return nil
}

// firstNonFinite returns the index and value of the first Inf or NaN in
// little-endian raw of dtype d (F16, BF16 or F32), or -1.
func firstNonFinite(d safetensors.DType, raw []byte) (int, float32) {
	switch d {
	case safetensors.F16, safetensors.BF16:
		mask, widen := uint16(0x7c00), tensor.F16ToF32
		if d == safetensors.BF16 {
			mask, widen = 0x7f80, tensor.BF16ToF32
		}
		for i := 0; i+2 <= len(raw); i += 2 {
			if h := binary.LittleEndian.Uint16(raw[i:]); h&mask == mask {
				return i / 2, widen(h)
			}
		}
	case safetensors.F32:
		for i := 0; i+4 <= len(raw); i += 4 {
			if u := binary.LittleEndian.Uint32(raw[i:]); u&0x7f800000 == 0x7f800000 {
				return i / 4, math.Float32frombits(u)
			}
		}
	}
	return -1, 0
}

// checkContentHash (version 2) compares the manifest's content hash with
// the one recorded in it. It runs last: every field the model is computed
// from has been checked against the shards and config.json by then, so
// what it catches is an edit of the rest (source, quantization,
// forge_version, held-out SNRs, a file's recorded hash).
func (b *Bundle) checkContentHash() error {
	if b.man.FormatVersion < 2 {
		return nil
	}
	sum, err := b.man.ContentHash()
	if err != nil {
		return fmt.Errorf("bundle %s: %s: %w", b.dir, ManifestName, err)
	}
	if sum != b.man.ContentSHA256 {
		return fmt.Errorf("bundle %s: %s: content hash %s, content_sha256 says %s: the manifest was edited after export", b.dir, ManifestName, sum, b.man.ContentSHA256)
	}
	return nil
}
