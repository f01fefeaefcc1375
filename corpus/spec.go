package corpus

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

var (
	// ErrSpec marks a malformed "FILE[:ROWS]" source specification.
	ErrSpec = errors.New("bad token source spec")
	// ErrUnsupported marks a file kind, NPY dtype or layout corpus does not read.
	ErrUnsupported = errors.New("unsupported token source file")
	// ErrFormat marks a token source file whose contents are malformed.
	ErrFormat = errors.New("malformed token source file")
	// ErrTooFewRows marks a source that yields fewer rows than were asked of it (or none).
	ErrTooFewRows = errors.New("too few rows")
	// ErrTokenRange marks a token id outside [0, vocabulary size).
	ErrTokenRange = errors.New("token id outside the vocabulary")
)

// Spec names one token source (calibration or evaluation data): a file and how many of its
// rows to take.
type Spec struct {
	Path string `json:"path"`
	Rows int    `json:"rows,omitempty"` // rows to sample from the file; 0 takes them all
}

// ParseSpec reads "FILE:ROWS" or "FILE". When s holds a colon, the text after the last colon
// must be a positive decimal integer (digits only, no sign) and the text before it a non-empty
// path; so "a:b.txt:8" is the file "a:b.txt" with 8 rows, while "a:b.txt" alone is an error
// (name such a file with an explicit row count). Without a colon, Rows is 0: all rows.
func ParseSpec(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("empty source spec, want FILE or FILE:ROWS: %w", ErrSpec)
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Spec{Path: s}, nil
	}
	path, rows := s[:i], s[i+1:]
	if path == "" {
		return Spec{}, fmt.Errorf("source spec %q: no file before the colon: %w", s, ErrSpec)
	}
	if rows == "" {
		return Spec{}, fmt.Errorf("source spec %q: no row count after the colon, want FILE:ROWS: %w", s, ErrSpec)
	}
	for _, c := range []byte(rows) {
		if c < '0' || c > '9' {
			return Spec{}, fmt.Errorf("source spec %q: row count %q is not a positive integer: %w", s, rows, ErrSpec)
		}
	}
	n, err := strconv.Atoi(rows)
	if err != nil {
		return Spec{}, fmt.Errorf("source spec %q: row count %q is too large: %w", s, rows, ErrSpec)
	}
	if n == 0 {
		return Spec{}, fmt.Errorf("source spec %q: row count must be positive (omit \":ROWS\" for all rows): %w", s, ErrSpec)
	}
	return Spec{Path: path, Rows: n}, nil
}

// String formats s as ParseSpec reads it: "FILE:ROWS", or "FILE" when Rows is 0.
func (s Spec) String() string {
	if s.Rows == 0 {
		return s.Path
	}
	return s.Path + ":" + strconv.Itoa(s.Rows)
}

// Kind is how a token source file is read, chosen by its extension.
type Kind string

const (
	Text Kind = "text" // .txt: documents separated by <|endoftext|> lines, tokenized and cut into rows
	Chat Kind = "chat" // .jsonl: one OpenAI-style conversation per line, rendered, tokenized, cut
	JSON Kind = "json" // .json: an array of arrays of token ids
	NPY  Kind = "npy"  // .npy: a 2-D integer array of token ids
	// Generated names, in a Recipe, rows a model generated from a .jsonl file of prompts
	// (forge calib generate, forge trace --generate): each prompt followed by the model's
	// answer. Load does not read it; no extension maps to it.
	Generated Kind = "generated"
)

// extensions maps each accepted extension (compared lower-cased) to its kind.
var extensions = map[string]Kind{".txt": Text, ".jsonl": Chat, ".json": JSON, ".npy": NPY}

// KindOf returns the kind of path by its extension, compared without regard to case: .txt
// (Text), .jsonl (Chat), .json (JSON) or .npy (NPY). Any other extension is an error wrapping
// ErrUnsupported that names the file and the accepted extensions.
func KindOf(path string) (Kind, error) {
	if k, ok := extensions[strings.ToLower(filepath.Ext(path))]; ok {
		return k, nil
	}
	return "", fmt.Errorf("%s: unknown extension %q, want .txt (text), .jsonl (chat), .json or .npy (token ids): %w",
		path, filepath.Ext(path), ErrUnsupported)
}
