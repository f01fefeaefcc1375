package lcpp

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"forge/internal/durable"
	"forge/safetensors"
)

// A llama.cpp KL base holds, for every window of the text, the base model's
// compressed distributions (Compress) at the window's scored positions.
// It is stored in one of two layouts.
//
// Forge, a safetensors file (the default):
//
//	__metadata__                 format = "forge-lcpp-base", lcpp_version = "2", definition,
//	                             n_ctx, n_vocab, n_chunk, bos (−1: none), and the writer's
//	                             provenance (model, model_fingerprint, data, forge_version, …)
//	tokens                       I32 [n_chunk·n_ctx]  the text's tokens (no BOS replacement)
//	tokens.crc32c                U8 [4]  CRC-32C of tokens' bytes, little-endian
//	window.{i}.codes             I16 [scored, n_vocab] the uint16 codes, bit for bit (forge's
//	                             safetensors package has no U16; read them back as uint16)
//	window.{i}.scale             F32 [scored]
//	window.{i}.min_log_prob      F32 [scored]
//	window.{i}.crc32c            U8 [4]  CRC-32C of the window's three tensors' bytes, in
//	                             this order (contiguous in the file), little-endian
//
// for i = 0 … n_chunk−1 in that order, scored = n_ctx − 1 − n_ctx/2.
// Open verifies the tokens' checksum, ReadWindow a window's, and
// either refuses a mismatch with an error wrapping eval.ErrChecksum that names
// the file and the window. Version 1 files (written before lcpp_version 2)
// have no crc32c tensors and are still read, unverified.
//
// LlamaCpp, llama.cpp's own --kl-divergence-base file (perplexity.cpp,
// perplexity() with params.logits_file, read back by kl_divergence()), all
// little-endian:
//
//	"_logits_"                   8 bytes
//	n_ctx                        uint32
//	n_vocab, n_chunk             int32, int32
//	tokens                       int32 [n_chunk·n_ctx]
//	per window, per scored row   nv = 2·⌈n_vocab/2⌉ + 4 uint16: scale (float32, 2 slots),
//	                             min_log_prob (float32, 2 slots), n_vocab codes, one zero
//	                             slot when n_vocab is odd
//
// It carries no BOS rule, no provenance and no checksum, and cannot gain
// any: llama-perplexity reads exactly these bytes and checks the file's
// size. A file shorter or longer than these sizes is refused.

// Format is a base file's layout.
type Format int

const (
	Forge    Format = iota // safetensors with metadata (the default)
	LlamaCpp               // llama.cpp's --kl-divergence-base binary
)

// String names the format.
func (f Format) String() string {
	if f == LlamaCpp {
		return "llama.cpp"
	}
	return "forge"
}

// BOSUnknown is Header.BOS for a llama.cpp file, which does not say
// whether windows began with a BOS.
const BOSUnknown = -2

const (
	binMagic      = "_logits_"
	formatName    = "forge-lcpp-base"
	layoutVersion = 2  // lcpp_version written; 1 (no checksums) is read too
	binHeader     = 20 // magic, n_ctx, n_vocab, n_chunk
	maxElements   = 1 << 50
)

// Header is what every window of a base shares.
type Header struct {
	NCtx, NVocab, NChunk int
	Tokens               []int // [NChunk·NCtx], as tokenized (window starts not replaced)
	// BOS is the id that replaced each window's first token when the base
	// was computed, −1 for none, BOSUnknown when the file does not say.
	BOS  int
	Meta map[string]string // provenance, stored by Forge only
}

// Scored returns the number of scored rows per window.
func (h *Header) Scored() int { _, n := Scored(h.NCtx); return n }

// check validates the header's numbers and tokens; it names path.
func (h *Header) check(path string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBase, path, fmt.Sprintf(format, args...))
	}
	switch {
	case h.NCtx < 3:
		return bad("n_ctx %d leaves no scored position (need ≥ 3)", h.NCtx)
	case h.NVocab < 1:
		return bad("n_vocab %d", h.NVocab)
	case h.NChunk < 1:
		return bad("n_chunk %d", h.NChunk)
	case float64(h.NChunk)*float64(h.NCtx)*float64(h.NVocab+6) > maxElements:
		return bad("n_chunk %d × n_ctx %d × n_vocab %d is implausibly large", h.NChunk, h.NCtx, h.NVocab)
	case len(h.Tokens) != h.NChunk*h.NCtx:
		return bad("%d tokens for %d windows of %d", len(h.Tokens), h.NChunk, h.NCtx)
	case h.BOS < BOSUnknown || h.BOS >= h.NVocab:
		return bad("BOS id %d outside the vocabulary of %d", h.BOS, h.NVocab)
	}
	for i, t := range h.Tokens {
		if t < 0 || t >= h.NVocab {
			return bad("token %d at index %d is outside the vocabulary of %d", t, i, h.NVocab)
		}
	}
	return nil
}

// BaseWindow is one window's compressed base rows.
type BaseWindow struct {
	Codes      []uint16  // [scored][vocab] Compress codes
	Scale      []float32 // [scored]
	MinLogProb []float32 // [scored]
	vocab      int
}

// Resize shapes w for scored rows of vocab entries, reusing its memory.
func (w *BaseWindow) Resize(scored, vocab int) {
	w.Codes = grow(w.Codes, scored*vocab)
	w.Scale = grow(w.Scale, scored)
	w.MinLogProb = grow(w.MinLogProb, scored)
	w.vocab = vocab
}

// Row returns row j's codes (a view), scale and min_log_prob.
func (w *BaseWindow) Row(j int) (codes []uint16, scale, minLogProb float32) {
	return w.Codes[j*w.vocab : (j+1)*w.vocab], w.Scale[j], w.MinLogProb[j]
}

// Compress stores row j as Compress of logits z.
func (w *BaseWindow) Compress(j int, z []float32) {
	w.Scale[j], w.MinLogProb[j] = Compress(w.Codes[j*w.vocab:(j+1)*w.vocab], z)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// windowNames are window i's tensor names in the forge layout.
func windowNames(i int) (codes, scale, minLogProb, sum string) {
	p := "window." + strconv.Itoa(i) + "."
	return p + "codes", p + "scale", p + "min_log_prob", p + "crc32c"
}

// tokensSum names the tokens' checksum in the forge layout.
const tokensSum = "tokens.crc32c"

// castagnoli is the CRC-32C table (the checksum of eval's traces too).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the CRC-32C of the concatenated parts, little-endian.
func checksum(parts ...[]byte) []byte {
	var sum uint32
	for _, p := range parts {
		sum = crc32.Update(sum, castagnoli, p)
	}
	return binary.LittleEndian.AppendUint32(nil, sum)
}

// Writer streams a base to disk window by window; the file appears
// at its path only when Close succeeds (written to a temporary file beside
// it, synced, renamed). Use it as
//
//	w, err := Create(path, h, Forge)
//	if err != nil { … }
//	defer w.Abort()
//	for … { if err := w.WriteWindow(&win); err != nil { return err } }
//	return w.Close()
type Writer struct {
	h      Header
	path   string
	st     *safetensors.Writer // Forge
	bin    *os.File            // LlamaCpp: the temporary file
	buf    *bufio.Writer
	next   int // windows written
	scored int
	scr    []byte
	err    error
}

// Create checks h and starts writing a base in the given layout.
func Create(path string, h Header, format Format) (*Writer, error) {
	if err := h.check(path); err != nil {
		return nil, err
	}
	w := &Writer{h: h, path: path, scored: h.Scored()}
	if format == LlamaCpp {
		return w, w.createBin()
	}
	meta := map[string]string{}
	for k, v := range h.Meta {
		meta[k] = v
	}
	for k, v := range map[string]string{"format": formatName, "lcpp_version": strconv.Itoa(layoutVersion),
		"definition": Definition, "n_ctx": strconv.Itoa(h.NCtx), "n_vocab": strconv.Itoa(h.NVocab),
		"n_chunk": strconv.Itoa(h.NChunk), "bos": strconv.Itoa(h.BOS)} {
		if _, ok := h.Meta[k]; ok {
			return nil, fmt.Errorf("lcpp base %s: metadata key %q is reserved", path, k)
		}
		meta[k] = v
	}
	sum := safetensors.TensorInfo{Name: tokensSum, DType: safetensors.U8, Shape: []int{4}}
	infos := []safetensors.TensorInfo{{Name: "tokens", DType: safetensors.I32, Shape: []int{len(h.Tokens)}}, sum}
	for i := range h.NChunk {
		c, s, m, sumName := windowNames(i)
		sum.Name = sumName
		infos = append(infos,
			safetensors.TensorInfo{Name: c, DType: safetensors.I16, Shape: []int{w.scored, h.NVocab}},
			safetensors.TensorInfo{Name: s, DType: safetensors.F32, Shape: []int{w.scored}},
			safetensors.TensorInfo{Name: m, DType: safetensors.F32, Shape: []int{w.scored}}, sum)
	}
	st, err := safetensors.Create(path, infos, meta)
	if err != nil {
		return nil, err
	}
	w.st = st
	tokens := appendInt32s(nil, h.Tokens)
	err = st.WriteTensor("tokens", tokens)
	if err == nil {
		err = st.WriteTensor(tokensSum, checksum(tokens))
	}
	if err != nil {
		st.Abort()
		return nil, err
	}
	return w, nil
}

// createBin opens the temporary file and writes llama.cpp's header.
func (w *Writer) createBin() error {
	f, err := os.CreateTemp(filepath.Dir(w.path), filepath.Base(w.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("lcpp base %s: %w", w.path, err)
	}
	w.bin, w.buf = f, bufio.NewWriterSize(f, 1<<20)
	hdr := []byte(binMagic)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(w.h.NCtx))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(w.h.NVocab))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(w.h.NChunk))
	hdr = appendInt32s(hdr, w.h.Tokens)
	if _, err := w.buf.Write(hdr); err != nil {
		w.Abort()
		return fmt.Errorf("lcpp base %s: %w", w.path, err)
	}
	return nil
}

// WriteWindow writes the next window's rows (shaped [scored][n_vocab]).
func (w *Writer) WriteWindow(win *BaseWindow) error {
	if w.err != nil {
		return w.err
	}
	switch {
	case w.next >= w.h.NChunk:
		return w.fail(fmt.Errorf("lcpp base %s: window %d beyond the declared %d", w.path, w.next, w.h.NChunk))
	case len(win.Scale) != w.scored || len(win.MinLogProb) != w.scored || len(win.Codes) != w.scored*w.h.NVocab:
		return w.fail(fmt.Errorf("lcpp base %s: window %d has %d codes and %d scales, want %d × %d",
			w.path, w.next, len(win.Codes), len(win.Scale), w.scored, w.h.NVocab))
	}
	var err error
	if w.st != nil {
		c, s, m, sum := windowNames(w.next)
		w.scr = appendUint16s(w.scr[:0], win.Codes)
		scale, mlp := appendFloat32s(nil, win.Scale), appendFloat32s(nil, win.MinLogProb)
		for _, t := range []struct {
			name string
			raw  []byte
		}{{c, w.scr}, {s, scale}, {m, mlp}, {sum, checksum(w.scr, scale, mlp)}} {
			if err = w.st.WriteTensor(t.name, t.raw); err != nil {
				break
			}
		}
	} else {
		for j := range w.scored {
			codes, scale, mlp := win.Row(j)
			b := binary.LittleEndian.AppendUint32(w.scr[:0], math.Float32bits(scale))
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(mlp))
			b = appendUint16s(b, codes)
			if w.h.NVocab%2 == 1 {
				b = append(b, 0, 0)
			}
			w.scr = b
			if _, err = w.buf.Write(b); err != nil {
				err = fmt.Errorf("lcpp base %s: %w", w.path, err)
				break
			}
		}
	}
	if err != nil {
		return w.fail(err)
	}
	w.next++
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Close checks that every window was written, then makes the file durable
// and renames it into place.
func (w *Writer) Close() error {
	if w.err != nil {
		w.Abort()
		return w.err
	}
	if w.next != w.h.NChunk {
		w.Abort()
		return fmt.Errorf("lcpp base %s: closed after %d of %d windows", w.path, w.next, w.h.NChunk)
	}
	if w.st != nil {
		return w.st.Close()
	}
	f := w.bin
	w.bin = nil
	err := w.buf.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), w.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("lcpp base %s: %w", w.path, err)
	}
	return durable.SyncDir(filepath.Dir(w.path))
}

// Abort discards an unfinished file; after Close it does nothing.
func (w *Writer) Abort() {
	if w.st != nil {
		w.st.Abort()
	}
	if w.bin != nil {
		w.bin.Close()
		os.Remove(w.bin.Name())
		w.bin = nil
	}
	w.fail(fmt.Errorf("lcpp base %s: writer aborted", w.path))
}

func appendInt32s(dst []byte, v []int) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(x)))
	}
	return dst
}

func appendUint16s(dst []byte, v []uint16) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint16(dst, x)
	}
	return dst
}

func appendFloat32s(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}
