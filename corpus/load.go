package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"

	"forge/tokenizer"
)

// DefaultSeq is the row length of text and chat sources when Options.Seq is 0.
const DefaultSeq = 1024

// Options control how sources become rows. The zero value cuts text and chat into rows of
// DefaultSeq tokens, takes pre-tokenized rows as given and samples with seed 0.
type Options struct {
	// Seq is the number of tokens per row. Text and chat streams are cut into rows of Seq
	// tokens (DefaultSeq when 0). Pre-tokenized rows (.json, .npy) are kept as given when Seq
	// is 0; otherwise rows longer than Seq keep their first Seq tokens and a shorter row is
	// an error.
	Seq int `json:"seq"`
	// Seed drives the sampling of Spec.Rows rows out of a file's rows.
	Seed uint64 `json:"seed"`
}

// Source describes what one Spec contributed to a Set, for manifests and traces.
type Source struct {
	Path      string `json:"path"`      // as given in the Spec
	Kind      Kind   `json:"kind"`      // text, chat, json or npy
	Rows      int    `json:"rows"`      // rows taken
	Available int    `json:"available"` // rows the file yields
	SHA256    string `json:"sha256"`    // hex SHA-256 of the file's bytes
	Tokens    int    `json:"tokens"`    // tokens in the rows taken
}

// Set is a list of token rows and where they came from.
type Set struct {
	Rows    [][]int  // [row][token]: the rows of every source, in spec order, each in file order
	Sources []Source // one per Spec, in order
	Options Options  // as passed to Load
	Vocab   int      // every id is in [0, Vocab): the tokenizer's VocabSize
}

// Load reads each spec's file in order and returns their rows, concatenated.
//
// A file's kind comes from its extension (KindOf). A .txt file's documents, separated by lines
// that are exactly <|endoftext|>, are each encoded with tok.Encode and joined with the
// <|endoftext|> id between them (none before the first or after the last); a .jsonl file's
// conversations are each rendered with tok.Chat (the line's tools, ParseArguments, no
// generation prompt), encoded with tok.Encode and joined the same way. tok.Encode recognizes
// added tokens in the text as Hugging Face's encode does by default, so a literal
// "<|im_start|>" inside a document becomes that token; no BOS is added. The stream is cut into
// consecutive, non-overlapping rows of Seq tokens from its first token, and the final partial
// row is dropped. A .json or .npy file's rows are taken as given, subject to Options.Seq.
//
// Every id of every row of the file must lie in [0, tok.VocabSize()), and a file must yield at
// least one row. When spec.Rows is 0 all the file's rows are taken; when it equals the rows
// available, all of them too; when smaller, spec.Rows rows are drawn without replacement by a
// partial Fisher–Yates shuffle of the row indices 0..n-1 driven by PCG-DXSM seeded with
// (Options.Seed, i), i the spec's index in specs (j = k + a uniform draw in [0, n-k) by
// Lemire's multiply-shift with rejection, for k = 0..Rows-1), and kept in file order. Asking
// for more rows than the file has is an error wrapping ErrTooFewRows that names the file and
// both counts. Sampled rows are copied, so the rest of the file's stream can be freed.
func Load(specs []Spec, tok *tokenizer.Tokenizer, opt Options) (*Set, error) {
	if tok == nil {
		return nil, fmt.Errorf("token rows: no tokenizer")
	}
	if opt.Seq < 0 {
		return nil, fmt.Errorf("token rows: sequence length %d is negative", opt.Seq)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("token rows: no sources: %w", ErrSpec)
	}
	set := &Set{Options: opt, Vocab: tok.VocabSize()}
	for i, sp := range specs {
		rows, src, err := loadSpec(sp, uint64(i), tok, opt)
		if err != nil {
			return nil, err
		}
		set.Rows = append(set.Rows, rows...)
		set.Sources = append(set.Sources, src)
	}
	return set, nil
}

// loadSpec reads, checks and samples one source.
func loadSpec(sp Spec, index uint64, tok *tokenizer.Tokenizer, opt Options) ([][]int, Source, error) {
	if sp.Path == "" {
		return nil, Source{}, fmt.Errorf("token rows: a source with no file: %w", ErrSpec)
	}
	if sp.Rows < 0 {
		return nil, Source{}, fmt.Errorf("%s: row count %d is negative: %w", sp.Path, sp.Rows, ErrSpec)
	}
	kind, err := KindOf(sp.Path)
	if err != nil {
		return nil, Source{}, err
	}
	data, err := os.ReadFile(sp.Path)
	if err != nil {
		return nil, Source{}, fmt.Errorf("%s: %w", sp.Path, err)
	}
	sum := sha256.Sum256(data)
	rows, err := fileRows(sp.Path, kind, data, tok, opt.Seq)
	if err != nil {
		return nil, Source{}, err
	}
	if err := checkIDs(rows, tok.VocabSize()); err != nil {
		return nil, Source{}, fmt.Errorf("%s: %w", sp.Path, err)
	}
	n := len(rows)
	if sp.Rows > n {
		return nil, Source{}, fmt.Errorf("%s: %d rows available, %d asked: %w", sp.Path, n, sp.Rows, ErrTooFewRows)
	}
	if sp.Rows > 0 && sp.Rows < n {
		rows = gather(rows, Sample(n, sp.Rows, opt.Seed, index))
	}
	src := Source{Path: sp.Path, Kind: kind, Rows: len(rows), Available: n, SHA256: hex.EncodeToString(sum[:])}
	for _, r := range rows {
		src.Tokens += len(r)
	}
	return rows, src, nil
}

// fileRows turns a file's bytes into all of its rows.
func fileRows(path string, kind Kind, data []byte, tok *tokenizer.Tokenizer, seq int) ([][]int, error) {
	var rows [][]int
	switch kind {
	case Text, Chat:
		if seq == 0 {
			seq = DefaultSeq
		}
		sep, ok := tok.TokenID(Separator)
		if !ok {
			return nil, fmt.Errorf("%s: the tokenizer has no %s token to join documents: %w", path, Separator, ErrUnsupported)
		}
		var stream []int
		if kind == Text {
			stream = textStream(data, tok, sep)
		} else {
			var err error
			if stream, err = chatStream(path, data, tok, sep); err != nil {
				return nil, err
			}
		}
		rows = cut(stream, seq)
		if len(rows) == 0 {
			return nil, fmt.Errorf("%s: %d tokens make no row of %d: %w", path, len(stream), seq, ErrTooFewRows)
		}
		return rows, nil
	case JSON:
		var err error
		if rows, err = jsonRows(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case NPY:
		var err error
		if rows, err = npyRows(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows: %w", path, ErrTooFewRows)
	}
	for i, r := range rows {
		switch {
		case len(r) == 0:
			return nil, fmt.Errorf("%s: row %d is empty: %w", path, i, ErrFormat)
		case seq > 0 && len(r) < seq:
			return nil, fmt.Errorf("%s: row %d has %d tokens, fewer than the sequence length %d: %w", path, i, len(r), seq, ErrFormat)
		case seq > 0:
			rows[i] = r[:seq:seq]
		}
	}
	return rows, nil
}

// cut returns the consecutive rows of seq tokens of stream, dropping a final partial row.
// The rows share stream's backing array, each capped at its end.
func cut(stream []int, seq int) [][]int {
	rows := make([][]int, len(stream)/seq)
	for i := range rows {
		rows[i] = stream[i*seq : (i+1)*seq : (i+1)*seq]
	}
	return rows
}

// checkIDs reports the first id outside [0, vocab).
func checkIDs(rows [][]int, vocab int) error {
	for i, r := range rows {
		for j, id := range r {
			if id < 0 || id >= vocab {
				return fmt.Errorf("row %d, position %d: id %d not in [0, %d): %w", i, j, id, vocab, ErrTokenRange)
			}
		}
	}
	return nil
}

// gather copies rows[idx[0]], rows[idx[1]], ... into one new backing array.
func gather(rows [][]int, idx []int) [][]int {
	total := 0
	for _, i := range idx {
		total += len(rows[i])
	}
	flat := make([]int, 0, total)
	out := make([][]int, len(idx))
	for k, i := range idx {
		lo := len(flat)
		flat = append(flat, rows[i]...)
		out[k] = flat[lo:len(flat):len(flat)]
	}
	return out
}

// Sample returns k distinct indices out of [0, n), ascending, drawn as Load documents: the
// first k steps of a Fisher–Yates shuffle of 0..n-1 driven by rand.NewPCG(seed, stream), each
// step j = i + r with r uniform in [0, n-i) by Lemire's multiply-shift with rejection on the
// generator's Uint64. The same arguments always give the same indices. It panics unless
// 0 <= k <= n.
func Sample(n, k int, seed, stream uint64) []int {
	if k < 0 || k > n {
		panic(fmt.Sprintf("corpus.Sample: k = %d outside [0, %d]", k, n))
	}
	src := rand.NewPCG(seed, stream)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := range k {
		j := i + int(below(src, uint64(n-i)))
		perm[i], perm[j] = perm[j], perm[i]
	}
	sel := perm[:k:k]
	slices.Sort(sel)
	return sel
}

// below returns a uniform draw in [0, m), m > 0 (Lemire, "Fast random integer generation in an
// interval", 2019).
func below(src *rand.PCG, m uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), m)
	if lo < m {
		thresh := -m % m
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), m)
		}
	}
	return hi
}

// Tokens returns the number of tokens in all rows.
func (s *Set) Tokens() int {
	n := 0
	for _, r := range s.Rows {
		n += len(r)
	}
	return n
}

// HoldOut splits the last k rows off as held-out data: train is Rows[:len-k], held is the last
// k rows (which come from the last sources in spec order). The slices share s.Rows. It is an
// error unless 0 <= k <= len(s.Rows).
func (s *Set) HoldOut(k int) (train, held [][]int, err error) {
	n := len(s.Rows)
	if k < 0 || k > n {
		return nil, nil, fmt.Errorf("corpus: cannot hold out %d of %d rows", k, n)
	}
	return s.Rows[: n-k : n-k], s.Rows[n-k:], nil
}

// Fingerprint is the hex SHA-256 of the rows: for each row its length, then each id, all as
// little-endian uint32. Two sets with the same rows in the same order have the same
// fingerprint, whatever their files were called.
func (s *Set) Fingerprint() string {
	h := sha256.New()
	var buf []byte
	for _, r := range s.Rows {
		buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(len(r)))
		for _, id := range r {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Recipe records how a Set was made, for a bundle manifest or a trace: the options and sources
// (with file hashes) replay it through Load, and Fingerprint identifies the resulting rows.
type Recipe struct {
	Options     Options  `json:"options"`
	Vocab       int      `json:"vocab"`
	Sources     []Source `json:"sources"`
	Rows        int      `json:"rows"`
	Tokens      int      `json:"tokens"`
	Fingerprint string   `json:"fingerprint"`
}

// Recipe returns the set's recipe.
func (s *Set) Recipe() Recipe {
	return Recipe{
		Options:     s.Options,
		Vocab:       s.Vocab,
		Sources:     slices.Clone(s.Sources),
		Rows:        len(s.Rows),
		Tokens:      s.Tokens(),
		Fingerprint: s.Fingerprint(),
	}
}

// Specs returns the specs that replay the recipe's sources through Load.
func (r Recipe) Specs() []Spec {
	specs := make([]Spec, len(r.Sources))
	for i, src := range r.Sources {
		specs[i] = Spec{Path: src.Path, Rows: src.Rows}
		if src.Rows == src.Available {
			specs[i].Rows = 0
		}
	}
	return specs
}
