// Package npy reads and writes NumPy .npy files, forge's one NPY codec:
// token rows for calibration and evaluation data (package corpus) and
// per-position KL (forge eval --kl-out, read back by eval compare).
//
// A file (format versions 1.0, 2.0 and 3.0,
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
// is
//
//	"\x93NUMPY"   magic (Magic)
//	major, minor  version bytes: 1 0, 2 0 or 3 0
//	header length uint16 little-endian (1.0) or uint32 (2.0, 3.0)
//	header        a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (N,), },
//	              padded with spaces and ended by '\n'
//	data          the elements, ∏ shape of them, each of the dtype's size
//
// Parse accepts exactly the keys descr, fortran_order and shape, in any
// order, quoted with ' or ", with or without a trailing comma, and
// Python 2's 3L integers. It reads the little-endian numeric dtypes forge
// exchanges: signed and unsigned integers of 1, 2, 4 and 8 bytes ("|i1",
// "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"; one-byte types with any
// byte-order mark) and IEEE floats of 4 and 8 bytes ("<f4", "<f8"). The
// data must be exactly as long as the shape needs. Elements are kept in
// file order; Array.Fortran says whether that is row-major (C) or
// column-major (Fortran) order, the same bytes for 0-D and 1-D arrays;
// which orders and ranks it accepts is the caller's choice.
//
// Errors are *Error values: the message says what is wrong, and errors.Is
// tells a file npy does not read (ErrUnsupported: another format version,
// a big-endian, structured or other dtype) from a malformed one
// (ErrFormat: bad magic, a header that is not such a dict, data shorter or
// longer than the shape). Parse takes the file's bytes; its callers read
// them (calib hashes them too) and name the file in their errors.
//
// AppendHeader writes the preamble as numpy does (version 1.0, 2.0 when
// the header needs more than 65535 bytes; data aligned to 64 bytes);
// EncodeFloat32 and WriteFloat32 write a 1-D float32 array, EncodeInt64Rows
// a 2-D int64 array of token rows.
package npy
