package lcpp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"forge/eval"
	"forge/safetensors"
)

// Base is an open base file (either layout; see Format). Its header
// is validated at open and every window's size is known to be present, so
// a truncated or padded file never opens.
type Base struct {
	Header
	Path   string
	Format Format
	st     *safetensors.File // Forge
	f      *os.File          // LlamaCpp
	buf    []byte
	sums   bool // Forge version ≥ 2: tokens and windows carry a CRC-32C
}

// Open opens a base written by Create or by llama.cpp's
// `llama-perplexity --kl-divergence-base FILE -f TEXT`; the layout is told
// by the first 8 bytes ("_logits_" for llama.cpp's). A forge base's tokens
// are verified against their checksum here, each window's in ReadWindow.
// Errors wrap ErrBase (or the safetensors error, which names the file
// and the problem), and eval.ErrChecksum for a checksum mismatch.
func Open(path string) (*Base, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lcpp base %s: %w", path, err)
	}
	magic := make([]byte, len(binMagic))
	_, err = io.ReadFull(f, magic)
	if err == nil && string(magic) == binMagic {
		b, err := openBin(path, f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return b, nil
	}
	f.Close()
	st, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBase, err)
	}
	b := &Base{Path: path, Format: Forge, st: st}
	if err := b.readForgeHeader(); err != nil {
		st.Close()
		return nil, err
	}
	return b, nil
}

func (b *Base) bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBase, b.Path, fmt.Sprintf(format, args...))
}

// readForgeHeader reads and checks the metadata, the tokens and every
// window tensor's dtype and shape.
func (b *Base) readForgeHeader() error {
	meta := b.st.Metadata()
	if meta["format"] != formatName {
		return b.bad("not a llama.cpp KL base (metadata format %q, want %q)", meta["format"], formatName)
	}
	v, err := strconv.Atoi(meta["lcpp_version"])
	if err != nil || v < 1 || v > layoutVersion {
		return b.bad("lcpp_version %q, this forge reads 1 to %d", meta["lcpp_version"], layoutVersion)
	}
	b.sums = v >= 2
	ints := map[string]*int{"n_ctx": &b.NCtx, "n_vocab": &b.NVocab, "n_chunk": &b.NChunk, "bos": &b.BOS}
	for k, p := range ints {
		v, err := strconv.Atoi(meta[k])
		if err != nil {
			return b.bad("metadata %s = %q is not an integer", k, meta[k])
		}
		*p = v
	}
	b.Meta = meta
	if err := b.checkTensor("tokens", safetensors.I32, b.NChunk*b.NCtx); err != nil {
		return err
	}
	if err := b.verify("tokens", tokensSum, "tokens"); err != nil {
		return err
	}
	toks, err := b.st.Int32("tokens")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBase, err)
	}
	b.Tokens = make([]int, len(toks))
	for i, t := range toks {
		b.Tokens[i] = int(t)
	}
	if err := b.Header.check(b.Path); err != nil {
		return err
	}
	scored := b.Scored()
	for i := range b.NChunk {
		c, s, m, sum := windowNames(i)
		if err := b.checkTensor(c, safetensors.I16, scored, b.NVocab); err != nil {
			return err
		}
		for _, name := range []string{s, m} {
			if err := b.checkTensor(name, safetensors.F32, scored); err != nil {
				return err
			}
		}
		if b.sums {
			if err := b.checkTensor(sum, safetensors.U8, 4); err != nil {
				return err
			}
		}
	}
	return nil
}

// verify checks, in a version ≥ 2 file, that the CRC-32C of the named
// tensors' bytes, concatenated, equals the one stored in sum; what names
// the checked part in the error.
func (b *Base) verify(what, sum string, names ...string) error {
	if !b.sums {
		return nil
	}
	if err := b.checkTensor(sum, safetensors.U8, 4); err != nil {
		return err
	}
	parts := make([][]byte, len(names))
	for i, name := range names {
		raw, err := b.st.Bytes(name)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBase, err)
		}
		parts[i] = raw
	}
	stored, err := b.st.Bytes(sum)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBase, err)
	}
	if got := checksum(parts...); !bytes.Equal(got, stored) {
		return fmt.Errorf("%w: %s: %s: %w: the CRC-32C of its bytes is %08x, %s holds %08x (the file was damaged after it was written)",
			ErrBase, b.Path, what, eval.ErrChecksum, binary.LittleEndian.Uint32(got), sum, binary.LittleEndian.Uint32(stored))
	}
	return nil
}

// checkTensor checks that the named tensor exists with the dtype and shape.
func (b *Base) checkTensor(name string, dt safetensors.DType, shape ...int) error {
	info, ok := b.st.Info(name)
	if !ok {
		return b.bad("tensor %q is missing (an incomplete base?)", name)
	}
	if info.DType != dt || fmt.Sprint(info.Shape) != fmt.Sprint(shape) {
		return b.bad("tensor %q is %v %v, want %v %v", name, info.DType, info.Shape, dt, shape)
	}
	return nil
}

// openBin reads llama.cpp's header after the magic and checks the
// file's size against it.
func openBin(path string, f *os.File) (*Base, error) {
	b := &Base{Path: path, Format: LlamaCpp, f: f}
	hdr := make([]byte, binHeader-len(binMagic))
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, b.bad("truncated header (n_ctx, n_vocab, n_chunk): %v", err)
	}
	b.NCtx = int(binary.LittleEndian.Uint32(hdr))
	b.NVocab = int(int32(binary.LittleEndian.Uint32(hdr[4:])))
	b.NChunk = int(int32(binary.LittleEndian.Uint32(hdr[8:])))
	b.BOS = BOSUnknown
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("lcpp base %s: %w", path, err)
	}
	if b.NCtx < 3 || b.NVocab < 1 || b.NChunk < 1 ||
		float64(b.NChunk)*float64(b.NCtx)*float64(b.NVocab+6) > maxElements {
		return nil, b.bad("implausible header: n_ctx %d, n_vocab %d, n_chunk %d", b.NCtx, b.NVocab, b.NChunk)
	}
	if want := b.binWindowOffset(b.NChunk); st.Size() != want {
		return nil, b.bad("file is %d bytes, but n_ctx %d, n_vocab %d, n_chunk %d need exactly %d (truncated or not a KL base)",
			st.Size(), b.NCtx, b.NVocab, b.NChunk, want)
	}
	raw := make([]byte, 4*b.NChunk*b.NCtx)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, b.bad("reading tokens: %v", err)
	}
	b.Tokens = make([]int, b.NChunk*b.NCtx)
	for i := range b.Tokens {
		b.Tokens[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	if err := b.Header.check(path); err != nil {
		return nil, err
	}
	return b, nil
}

// binRowSlots is llama.cpp's nv: uint16 slots per stored row.
func (b *Base) binRowSlots() int { return 2*((b.NVocab+1)/2) + 4 }

// binWindowOffset is the byte offset of window i (i = NChunk: the file size).
func (b *Base) binWindowOffset(i int) int64 {
	tokens := int64(4) * int64(b.NChunk) * int64(b.NCtx)
	window := int64(2) * int64(b.Scored()) * int64(b.binRowSlots())
	return binHeader + tokens + int64(i)*window
}

// ReadWindow reads window i's rows into dst (resized as needed) and checks
// each row's scale and min_log_prob are finite (scale ≥ 0) and, in a
// forge base of lcpp_version 2, the window's checksum (eval.ErrChecksum).
func (b *Base) ReadWindow(i int, dst *BaseWindow) error {
	if i < 0 || i >= b.NChunk {
		return b.bad("window %d of %d", i, b.NChunk)
	}
	scored := b.Scored()
	dst.Resize(scored, b.NVocab)
	if b.st != nil {
		if err := b.readForgeWindow(i, dst); err != nil {
			return err
		}
	} else if err := b.readBinWindow(i, dst); err != nil {
		return err
	}
	for j := range scored {
		s, m := dst.Scale[j], dst.MinLogProb[j]
		if !(s >= 0) || math.IsInf(float64(s), 0) || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
			return b.bad("window %d row %d: scale %v, min_log_prob %v", i, j, s, m)
		}
	}
	return nil
}

func (b *Base) readForgeWindow(i int, dst *BaseWindow) error {
	c, s, m, sum := windowNames(i)
	if err := b.verify(fmt.Sprintf("window %d", i), sum, c, s, m); err != nil {
		return err
	}
	raw, err := b.st.Bytes(c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBase, err)
	}
	for k := range dst.Codes {
		dst.Codes[k] = binary.LittleEndian.Uint16(raw[2*k:])
	}
	for name, out := range map[string][]float32{s: dst.Scale, m: dst.MinLogProb} {
		v, err := b.st.Float32(name)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBase, err)
		}
		copy(out, v)
	}
	return nil
}

func (b *Base) readBinWindow(i int, dst *BaseWindow) error {
	nv := b.binRowSlots()
	n := 2 * b.Scored() * nv
	b.buf = grow(b.buf, n)
	if _, err := b.f.ReadAt(b.buf, b.binWindowOffset(i)); err != nil {
		if errors.Is(err, io.EOF) {
			return b.bad("window %d: file ends early (changed since it was opened?)", i)
		}
		return fmt.Errorf("lcpp base %s: window %d: %w", b.Path, i, err)
	}
	for j := range b.Scored() {
		row := b.buf[2*j*nv : 2*(j+1)*nv]
		dst.Scale[j] = math.Float32frombits(binary.LittleEndian.Uint32(row))
		dst.MinLogProb[j] = math.Float32frombits(binary.LittleEndian.Uint32(row[4:]))
		codes, _, _ := dst.Row(j)
		for k := range codes {
			codes[k] = binary.LittleEndian.Uint16(row[8+2*k:])
		}
	}
	return nil
}

// Close releases the file.
func (b *Base) Close() error {
	if b.st != nil {
		return b.st.Close()
	}
	return b.f.Close()
}
