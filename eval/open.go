package eval

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"forge/safetensors"
)

// ErrTrace marks a file that is not a complete, consistent forge trace.
var ErrTrace = errors.New("not a valid forge trace")

// ErrChecksum marks a trace row whose bytes do not match its stored
// CRC-32C: the file was damaged after it was written. Such errors also
// wrap ErrTrace. eval/lcpp wraps it too, for a damaged base file (with
// lcpp.ErrBase).
var ErrChecksum = errors.New("checksum mismatch")

// Trace is an open trace file whose metadata and tensor layout have been
// checked. Its methods may be called from several goroutines. Close it
// when done.
type Trace struct {
	Meta     Meta
	path     string
	f        *safetensors.File
	lens     []int         // tokens per row
	verified []atomic.Bool // rows whose checksum has been verified
}

// OpenTrace maps the trace at path and checks it: the safetensors header
// and data size (a truncated or cut file fails here), the metadata (every
// field present and consistent, layout version 1 or TraceVersion), and
// for every row the tensors of the layout with their dtypes and shapes,
// nothing missing and nothing extra. It does not read the rows' data: a
// row's checksum (version ≥ 2) is verified when the row is first read
// (Tokens, Score), so opening stays cheap for a trace of many gigabytes
// and a row is checked just before it is decoded, which then finds its
// pages already read. Errors name the file and wrap ErrTrace (or a
// safetensors error).
func OpenTrace(path string) (*Trace, error) {
	f, err := safetensors.Open(path)
	if errors.Is(err, safetensors.ErrFormat) {
		return nil, fmt.Errorf("trace: %w (a truncated or damaged file, or not a safetensors file)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	t := &Trace{path: path, f: f}
	if err := t.check(); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// bad returns an ErrTrace error naming the trace.
func (t *Trace) bad(format string, args ...any) error {
	return fmt.Errorf("trace %s: %s: %w", t.path, fmt.Sprintf(format, args...), ErrTrace)
}

// check validates the metadata and the tensor layout.
func (t *Trace) check() error {
	md := t.f.Metadata()
	if md["forge_trace"] == "" {
		return t.bad("no forge_trace metadata: not a trace written by forge trace")
	}
	m := &t.Meta
	v, err := strconv.Atoi(md["forge_trace"])
	if err != nil || v < 1 || v > TraceVersion {
		return t.bad("layout version %q, this forge reads 1 to %d", md["forge_trace"], TraceVersion)
	}
	m.Version = v
	for _, s := range []struct {
		key string
		dst *string
	}{{"forge_version", &m.ForgeVersion}, {"model", &m.Model}, {"model_kind", &m.ModelKind},
		{"fingerprint", &m.Fingerprint}, {"definition", &m.Definition}} {
		v, ok := md[s.key]
		if !ok {
			return t.bad("metadata lacks %q", s.key)
		}
		*s.dst = v
	}
	for _, n := range []struct {
		key string
		dst *int
		min int
	}{{"vocab", &m.Vocab, 1}, {"topk", &m.TopK, 0}, {"seq", &m.Seq, 0}, {"rows", &m.Rows, 1}, {"positions", &m.Positions, 1}} {
		v, err := strconv.Atoi(md[n.key])
		if err != nil || v < n.min {
			return t.bad("metadata %q = %q, want an integer ≥ %d", n.key, md[n.key], n.min)
		}
		*n.dst = v
	}
	if d := md["data"]; d != "" {
		if !json.Valid([]byte(d)) {
			return t.bad("metadata \"data\" is not valid JSON")
		}
		m.Data = json.RawMessage(d)
	}
	if m.TopK > m.Vocab {
		return t.bad("top-K %d exceeds the vocabulary %d", m.TopK, m.Vocab)
	}
	if m.Definition != Definition(m.TopK) {
		return t.bad("definition %q does not match top-K %d (want %q)", m.Definition, m.TopK, Definition(m.TopK))
	}
	return t.checkRows()
}

// checkRows checks every row's tensors against the layout.
func (t *Trace) checkRows() error {
	m := &t.Meta
	positions, count := 0, 0
	t.lens, t.verified = make([]int, m.Rows), make([]atomic.Bool, m.Rows)
	for r := range m.Rows {
		tokens, _, _, _, _, _ := rowNames(r)
		info, ok := t.f.Info(tokens)
		if !ok {
			return t.bad("row %d of %d: no tensor %q (a row is missing)", r, m.Rows, tokens)
		}
		if info.DType != safetensors.I32 || len(info.Shape) != 1 || info.Shape[0] < 2 {
			return t.bad("%q is %v %v, want I32 [T] with T ≥ 2", tokens, info.DType, info.Shape)
		}
		T := info.Shape[0]
		t.lens[r] = T
		positions += T - 1
		for _, want := range rowInfos(r, T, m.Vocab, m.TopK, m.Version) {
			got, ok := t.f.Info(want.Name)
			if !ok {
				return t.bad("row %d of %d: no tensor %q (a row is incomplete)", r, m.Rows, want.Name)
			}
			if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) {
				return t.bad("%q is %v %v, want %v %v", want.Name, got.DType, got.Shape, want.DType, want.Shape)
			}
			count++
		}
	}
	if positions != m.Positions {
		return t.bad("rows hold %d positions, metadata says %d", positions, m.Positions)
	}
	if n := len(t.f.Names()); n != count {
		return t.bad("%d tensors, the layout of %d rows has %d", n, m.Rows, count)
	}
	return nil
}

// Path returns the trace's file name.
func (t *Trace) Path() string { return t.path }

// Rows returns the number of token rows.
func (t *Trace) Rows() int { return len(t.lens) }

// Close unmaps the file.
func (t *Trace) Close() error { return t.f.Close() }

// Tokens returns row r's token ids, each checked to lie in the vocabulary,
// after verifying the row's checksum (verifyRow).
func (t *Trace) Tokens(r int) ([]int, error) {
	if err := t.verifyRow(r); err != nil {
		return nil, err
	}
	tokens, _, _, _, _, _ := rowNames(r)
	raw, err := t.f.Int32(tokens)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	out := make([]int, len(raw))
	for i, v := range raw {
		if v < 0 || int(v) >= t.Meta.Vocab {
			return nil, t.bad("row %d token %d: id %d outside the vocabulary [0, %d)", r, i, v, t.Meta.Vocab)
		}
		out[i] = int(v)
	}
	return out, nil
}

// verifyRow checks, once per row, that the CRC-32C of row r's bytes (its
// tensors before crc32c.<r>, contiguous in the file) equals the stored
// one. Version 1 traces have no checksums and pass unverified.
func (t *Trace) verifyRow(r int) error {
	if t.Meta.Version < 2 || t.verified[r].Load() {
		return nil
	}
	infos := rowInfos(r, t.lens[r], t.Meta.Vocab, t.Meta.TopK, t.Meta.Version)
	var sum uint32
	for _, info := range infos[:len(infos)-1] {
		raw, err := t.f.Bytes(info.Name)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		sum = crc32.Update(sum, castagnoli, raw)
	}
	stored, err := t.f.Bytes(crcName(r))
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if want := binary.LittleEndian.Uint32(stored); sum != want {
		return fmt.Errorf("trace %s: row %d: %w: the CRC-32C of its tensors is %08x, %s holds %08x (the file was damaged after it was written): %w",
			t.path, r, ErrChecksum, sum, crcName(r), want, ErrTrace)
	}
	t.verified[r].Store(true)
	return nil
}

// rowData is one row of a trace as stored.
type rowData struct {
	tokens []int
	logp   []byte    // [T−1][V] little-endian F32 (full traces), a view of the file
	ids    []int32   // [T−1][K] (top-K traces)
	lps    []float32 // [T−1][K]
	tail   []float32 // [T−1]
	refNLL []float32 // [T−1]
}

// row reads row r.
func (t *Trace) row(r int) (*rowData, error) {
	_, logp, ids, topLogp, tail, refNLL := rowNames(r)
	d := &rowData{}
	var err error
	if d.tokens, err = t.Tokens(r); err != nil {
		return nil, err
	}
	if d.refNLL, err = t.f.Float32(refNLL); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if t.Meta.TopK == 0 {
		if d.logp, err = t.f.Bytes(logp); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		return d, nil
	}
	if d.ids, err = t.f.Int32(ids); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if d.lps, err = t.f.Float32(topLogp); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if d.tail, err = t.f.Float32(tail); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return d, nil
}

// decodeF32 decodes little-endian float32s from src into dst and reports
// whether every value could be a log-prob: ≤ 0 (−Inf is a probability
// that underflowed), not NaN.
func decodeF32(dst []float32, src []byte) bool {
	ok := true
	for i := range dst {
		v := math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		dst[i] = v
		if !(v <= 0) { // NaN, +Inf or a positive log-prob
			ok = false
		}
	}
	return ok
}
