package eval

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"

	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// TraceVersion is the trace layout this package writes (doc.go): 2 adds a
// CRC-32C per row. OpenTrace also reads version 1, which has none.
const TraceVersion = 2

// castagnoli is the CRC-32C table of the row checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Meta describes a trace: where its reference came from and what it holds.
// It is stored as the safetensors "__metadata__" (one string per field,
// numbers in decimal, Data as JSON) beside the key "forge_trace" holding
// TraceVersion.
type Meta struct {
	// Version is the layout (forge_trace): TraceVersion for what Record
	// writes, 1 for an older trace without row checksums.
	Version      int    `json:"forge_trace"`
	ForgeVersion string `json:"forge_version"`
	Model        string `json:"model"`       // the reference directory, absolute
	ModelKind    string `json:"model_kind"`  // "checkpoint" or "bundle"
	Fingerprint  string `json:"fingerprint"` // source.Fingerprint: checkpoint.Fingerprint, or SHA-256 of forge.json
	Seq          int    `json:"seq"`         // tokens per row asked of the data (corpus.Options.Seq)
	// Data is the corpus.Recipe of the token rows as JSON: sources with
	// SHA-256s, options, the rows' fingerprint.
	Data json.RawMessage `json:"data,omitempty"`

	// Set by Record.
	Vocab      int    `json:"vocab"`
	TopK       int    `json:"topk"` // 0: the full log-softmax is stored
	Rows       int    `json:"rows"`
	Positions  int    `json:"positions"`  // scored positions: Σ over rows of (tokens − 1)
	Definition string `json:"definition"` // Definition(TopK)
}

// Definition names what a trace stores and so which KL it gives: "full"
// (every log-prob; exact KL) or "top-K+tail" with K in digits, e.g.
// "top-256+tail" (the K most likely tokens plus one tail bucket).
func Definition(topK int) string {
	if topK == 0 {
		return "full"
	}
	return fmt.Sprintf("top-%d+tail", topK)
}

// metadata returns m as safetensors metadata.
func (m *Meta) metadata() map[string]string {
	md := map[string]string{
		"forge_trace": strconv.Itoa(m.Version), "forge_version": m.ForgeVersion,
		"model": m.Model, "model_kind": m.ModelKind, "fingerprint": m.Fingerprint,
		"vocab": strconv.Itoa(m.Vocab), "topk": strconv.Itoa(m.TopK), "seq": strconv.Itoa(m.Seq),
		"rows": strconv.Itoa(m.Rows), "positions": strconv.Itoa(m.Positions), "definition": m.Definition,
	}
	if len(m.Data) > 0 {
		md["data"] = string(m.Data)
	}
	return md
}

// RecordOptions control Record. The zero value stores full log-softmaxes.
type RecordOptions struct {
	// TopK > 0 stores only the K most likely tokens' log-probs and the tail
	// mass instead of all vocabulary log-probs.
	TopK int
	// Progress, if set, is called with tokens done and total.
	Progress func(done, total int64)
}

// rowNames are the tensor names of row r (doc.go).
func rowNames(r int) (tokens, logp, ids, topLogp, tail, refNLL string) {
	s := "." + strconv.Itoa(r)
	return "tokens" + s, "logp" + s, "topk_ids" + s, "topk_logp" + s, "tail" + s, "ref_nll" + s
}

// crcName is the tensor holding row r's checksum (version ≥ 2).
func crcName(r int) string { return "crc32c." + strconv.Itoa(r) }

// rowInfos declares row r's tensors in the order Record writes them, in
// layout version v.
func rowInfos(r, T, vocab, k, v int) []safetensors.TensorInfo {
	tokens, logp, ids, topLogp, tail, refNLL := rowNames(r)
	infos := []safetensors.TensorInfo{{Name: tokens, DType: safetensors.I32, Shape: []int{T}}}
	if k == 0 {
		infos = append(infos, safetensors.TensorInfo{Name: logp, DType: safetensors.F32, Shape: []int{T - 1, vocab}})
	} else {
		infos = append(infos,
			safetensors.TensorInfo{Name: ids, DType: safetensors.I32, Shape: []int{T - 1, k}},
			safetensors.TensorInfo{Name: topLogp, DType: safetensors.F32, Shape: []int{T - 1, k}},
			safetensors.TensorInfo{Name: tail, DType: safetensors.F32, Shape: []int{T - 1}})
	}
	infos = append(infos, safetensors.TensorInfo{Name: refNLL, DType: safetensors.F32, Shape: []int{T - 1}})
	if v >= 2 {
		infos = append(infos, safetensors.TensorInfo{Name: crcName(r), DType: safetensors.U8, Shape: []int{4}})
	}
	return infos
}

// Record runs the reference model m over each row from an empty state (one
// prefill per row) and writes the trace to path: for every position t of a
// row of T tokens but the last, the distribution over the token t+1 that
// follows, as log-probs (LogSoftmax of the logits), and the reference NLL
// of the actual token t+1, and after each row the CRC-32C of its bytes
// (a Trace verifies it when the row is first read). See doc.go for the
// layout, version TraceVersion. The file is streamed one row (in full
// mode one block of positions) at a time and appears at path only when
// complete. meta supplies the provenance; Record fills in the rest and
// returns it.
func Record(ctx context.Context, path string, m *model.Model, rows [][]int, meta Meta, opt RecordOptions) (*Meta, error) {
	vocab := m.Config().Vocab
	if opt.TopK < 0 || opt.TopK > vocab {
		return nil, fmt.Errorf("trace %s: top-K %d outside [0, %d] (the vocabulary; 0 stores every log-prob)", path, opt.TopK, vocab)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("trace %s: no token rows", path)
	}
	meta.Version, meta.Vocab, meta.TopK, meta.Rows, meta.Positions, meta.Definition =
		TraceVersion, vocab, opt.TopK, len(rows), 0, Definition(opt.TopK)
	var infos []safetensors.TensorInfo
	var total int64
	for r, row := range rows {
		if len(row) < 2 {
			return nil, fmt.Errorf("trace %s: row %d has %d token(s); at least 2 are needed to score one", path, r, len(row))
		}
		if err := m.CheckTokens(row); err != nil {
			return nil, fmt.Errorf("trace %s: row %d: %w", path, r, err)
		}
		meta.Positions += len(row) - 1
		total += int64(len(row))
		infos = append(infos, rowInfos(r, len(row), vocab, opt.TopK, TraceVersion)...)
	}
	w, err := safetensors.Create(path, infos, meta.metadata())
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	rec := &recorder{path: path, w: w, m: m, st: m.NewState(), k: opt.TopK, progress: opt.Progress, total: total}
	for r, row := range rows {
		if err := rec.row(ctx, r, row); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &meta, nil
}

// recorder writes a trace's rows.
type recorder struct {
	path     string
	w        *safetensors.Writer
	m        *model.Model
	st       *model.State
	k        int
	progress func(done, total int64)
	done     int64
	total    int64
	buf      []byte // encoded log-probs of a block of positions (full mode)
	crc      uint32 // CRC-32C of the current row's bytes so far
}

// put writes the named tensor's bytes and adds them to the row checksum.
func (rc *recorder) put(name string, raw []byte) error {
	rc.crc = crc32.Update(rc.crc, castagnoli, raw)
	return rc.w.WriteTensor(name, raw)
}

// blockBytes bounds the log-probs encoded at once in full mode.
const blockBytes = 32 << 20

// row runs the reference over one row and writes its tensors.
func (rc *recorder) row(ctx context.Context, r int, row []int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lg, err := forwardRow(ctx, rc.m, rc.st, row)
	if err != nil {
		return fmt.Errorf("trace %s: row %d: the reference: %w", rc.path, r, err)
	}
	tokens, _, _, _, _, refNLL := rowNames(r)
	rc.crc = 0
	if err := rc.put(tokens, appendI32(nil, row)); err != nil {
		return err
	}
	nll := make([]float32, len(row)-1) // [T−1] reference NLL of the next token
	if rc.k == 0 {
		err = rc.full(ctx, r, row, lg, nll)
	} else {
		err = rc.topK(r, row, lg, nll)
	}
	if err != nil {
		return err
	}
	if err := rc.put(refNLL, appendF32(nil, nll)); err != nil {
		return err
	}
	if err := rc.w.WriteTensor(crcName(r), binary.LittleEndian.AppendUint32(nil, rc.crc)); err != nil {
		return err
	}
	rc.advance(1) // the row's last token, which predicts nothing
	return nil
}

// full streams row r's log-probs (logp.<r>) a block of positions at a
// time, the positions of a block in parallel.
func (rc *recorder) full(ctx context.Context, r int, row []int, lg *tensor.Matrix, nll []float32) error {
	_, logp, _, _, _, _ := rowNames(r)
	n, vocab := len(nll), lg.Cols
	block := max(1, min(n, blockBytes/(4*vocab)))
	for t0 := 0; t0 < n; t0 += block {
		if err := ctx.Err(); err != nil {
			return err
		}
		t1 := min(n, t0+block)
		rc.buf = resizeBytes(rc.buf, (t1-t0)*4*vocab)
		tensor.ParallelGrain(t1-t0, 1, func(lo, hi int) {
			lp := make([]float32, vocab)
			for i := lo; i < hi; i++ {
				t := t0 + i
				nll[t] = float32(LogSoftmax(lp, lg.Row(t)) - float64(lg.Row(t)[row[t+1]]))
				putF32(rc.buf[i*4*vocab:], lp)
			}
		})
		if err := finite(nll[t0:t1], t0); err != nil {
			return fmt.Errorf("trace %s: row %d: %w", rc.path, r, err)
		}
		rc.crc = crc32.Update(rc.crc, castagnoli, rc.buf)
		if _, err := rc.w.Write(rc.buf); err != nil {
			return fmt.Errorf("%s: %w", logp, err)
		}
		rc.advance(int64(t1 - t0))
	}
	return nil
}

// topK writes row r's top-K ids, log-probs and tail masses, the positions
// in parallel.
func (rc *recorder) topK(r int, row []int, lg *tensor.Matrix, nll []float32) error {
	_, _, ids, topLogp, tail, _ := rowNames(r)
	n, vocab, k := len(nll), lg.Cols, rc.k
	topIDs, topLps, tails := make([]int32, n*k), make([]float32, n*k), make([]float32, n)
	tensor.ParallelGrain(n, 1, func(lo, hi int) {
		lp, mask, heap := make([]float32, vocab), make([]bool, vocab), make([]int32, 0, k)
		for t := lo; t < hi; t++ {
			nll[t] = float32(LogSoftmax(lp, lg.Row(t)) - float64(lg.Row(t)[row[t+1]]))
			tails[t] = float32(topK(topIDs[t*k:(t+1)*k], topLps[t*k:(t+1)*k], lp, mask, heap))
		}
	})
	if err := finite(nll, 0); err != nil {
		return fmt.Errorf("trace %s: row %d: %w", rc.path, r, err)
	}
	for _, wr := range []struct {
		name string
		data []byte
	}{{ids, appendI32s(nil, topIDs)}, {topLogp, appendF32(nil, topLps)}, {tail, appendF32(nil, tails)}} {
		if err := rc.put(wr.name, wr.data); err != nil {
			return err
		}
	}
	rc.advance(int64(n))
	return nil
}

// finite reports the first position (counted from t0) whose reference
// NLL is not finite: its logits held a NaN or an infinity.
func finite(nll []float32, t0 int) error {
	for i, v := range nll {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("position %d: the reference's logits are not finite", t0+i)
		}
	}
	return nil
}

// advance reports n more tokens done.
func (rc *recorder) advance(n int64) {
	rc.done += n
	if rc.progress != nil {
		rc.progress(rc.done, rc.total)
	}
}

func resizeBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// putF32 encodes v little-endian into dst.
func putF32(dst []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

func appendF32(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

func appendI32(dst []byte, v []int) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(x)))
	}
	return dst
}

func appendI32s(dst []byte, v []int32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(x))
	}
	return dst
}
