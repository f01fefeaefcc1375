package safetensors

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Sentinel errors for errors.Is. Every error this package returns also names
// the file (and the tensor, where there is one).
var (
	// ErrFormat: the bytes are not a valid safetensors file, or the tensors
	// given to Create would not make one.
	ErrFormat = errors.New("safetensors: invalid format")
	// ErrNotFound: no tensor has the requested name.
	ErrNotFound = errors.New("safetensors: tensor not found")
	// ErrDType: the accessor does not apply to the tensor's dtype
	// (Float32 of an I32 tensor, for instance).
	ErrDType = errors.New("safetensors: wrong dtype")
	// ErrClosed: the File or Writer was already closed.
	ErrClosed = errors.New("safetensors: already closed")
	// ErrSequence: Writer data arrived out of order or with the wrong size,
	// or Close came before every byte was written.
	ErrSequence = errors.New("safetensors: tensor data out of sequence")
)

// pathError is an error about one file (and optionally one tensor). Its text
// is "safetensors <path>: [tensor "<name>": ]<msg>[: <cause>]" and it matches
// both kind and cause with errors.Is.
type pathError struct {
	path      string
	tensor    string // the tensor's name, when hasTensor
	hasTensor bool
	msg       string
	kind      error // a sentinel, or nil
	cause     error // an underlying error, or nil
}

func (e *pathError) Error() string {
	s := "safetensors " + e.path + ": "
	if e.hasTensor {
		s += fmt.Sprintf("tensor %q: ", e.tensor)
	}
	s += e.msg
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *pathError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// formatErr returns an ErrFormat error about the file path.
func formatErr(path, format string, args ...any) error {
	return &pathError{path: path, msg: fmt.Sprintf(format, args...), kind: ErrFormat}
}

// tensorErr returns an error of the given kind about one tensor of path.
func tensorErr(kind error, path, tensor, format string, args ...any) error {
	return &pathError{path: path, tensor: tensor, hasTensor: true, msg: fmt.Sprintf(format, args...), kind: kind}
}

// ioErr wraps an operating-system error from operation op on path. The path
// inside an *fs.PathError or *os.LinkError is dropped, since the message
// already names the file; errors.Is still sees the errno.
func ioErr(path, op string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &pe) {
		err = pe.Err
	} else if errors.As(err, &le) {
		err = le.Err
	}
	return &pathError{path: path, msg: op, cause: err}
}
