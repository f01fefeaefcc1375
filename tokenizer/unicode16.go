package tokenizer

import "unicode"

// Unicode data that Go's tables (Unicode 15.0, in unicode and golang.org/x/text 0.44) give
// differently from Hugging Face tokenizers (checked against tokenizers 0.23.2, the Rust library
// behind the Python and Node packages):
//
//   - Its Split regexes run on Oniguruma 6.9.10, whose \p{L} and \p{N} are Unicode 16.0's:
//     letters16 and numbers16 are the letters and numbers added in Unicode 15.1 and 16.0
//     (all numbers there are Nd).
//   - Its normalizers use unicode-normalization-alignments, whose data is Unicode 9.0's:
//     canonInert are the runes that Unicode 15.0 gives a combining class or a canonical
//     decomposition and 9.0 does not (added in 10.0–15.0), compatInert the further runes with
//     a compatibility decomposition since 10.0. To tokenizers they are plain starters.
//
// The tables were derived by running every code point through tokenizers' NFD, NFC, NFKD and
// Split pre-tokenizer and comparing with x/text and Go's unicode package; TestUnicodeVersions
// fails when Go's tables move on, so that they are derived again.

func isLetter16(r rune) bool { return r >= 0x1C89 && unicode.Is(letters16, r) }
func isNumber16(r rune) bool { return r >= 0x10D40 && unicode.Is(numbers16, r) }

func isCanonInert(r rune) bool  { return r >= 0x7FD && unicode.Is(canonInert, r) }
func isCompatInert(r rune) bool { return r >= 0x32FF && unicode.Is(compatInert, r) }

// canonInert: combining classes and canonical decompositions added in Unicode 10.0–15.0.
var canonInert = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x07fd, 0x07fd, 1},
		{0x0898, 0x089f, 1},
		{0x08ca, 0x08d3, 1},
		{0x09fe, 0x09fe, 1},
		{0x0c3c, 0x0c3c, 1},
		{0x0d3b, 0x0d3c, 1},
		{0x0eba, 0x0eba, 1},
		{0x1715, 0x1715, 1},
		{0x1abf, 0x1ace, 1},
		{0x1df6, 0x1dfa, 1},
		{0xa82c, 0xa82c, 1},
	},
	R32: []unicode.Range32{
		{0x10d24, 0x10d27, 1},
		{0x10eab, 0x10eac, 1},
		{0x10efd, 0x10eff, 1},
		{0x10f46, 0x10f50, 1},
		{0x10f82, 0x10f85, 1},
		{0x11070, 0x11070, 1},
		{0x1133b, 0x1133b, 1},
		{0x1145e, 0x1145e, 1},
		{0x11839, 0x1183a, 1},
		{0x11938, 0x11938, 1},
		{0x1193d, 0x1193e, 1},
		{0x11943, 0x11943, 1},
		{0x119e0, 0x119e0, 1},
		{0x11a34, 0x11a34, 1},
		{0x11a47, 0x11a47, 1},
		{0x11a99, 0x11a99, 1},
		{0x11d42, 0x11d42, 1},
		{0x11d44, 0x11d45, 1},
		{0x11d97, 0x11d97, 1},
		{0x11f41, 0x11f42, 1},
		{0x16ff0, 0x16ff1, 1},
		{0x1e08f, 0x1e08f, 1},
		{0x1e130, 0x1e136, 1},
		{0x1e2ae, 0x1e2ae, 1},
		{0x1e2ec, 0x1e2ef, 1},
		{0x1e4ec, 0x1e4ef, 1},
	},
}

// compatInert: compatibility decompositions added in Unicode 10.0–15.0 (canonInert aside).
var compatInert = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x32ff, 0x32ff, 1},
		{0xa7f2, 0xa7f4, 1},
		{0xab69, 0xab69, 1},
	},
	R32: []unicode.Range32{
		{0x10781, 0x10785, 1},
		{0x10787, 0x107b0, 1},
		{0x107b2, 0x107ba, 1},
		{0x1e030, 0x1e06d, 1},
		{0x1f16c, 0x1f16c, 1},
		{0x1fbf0, 0x1fbf9, 1},
	},
}

// letters16: \p{L} added in Unicode 15.1 and 16.0.
var letters16 = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x1c89, 0x1c8a, 1},
		{0xa7cb, 0xa7cd, 1},
		{0xa7da, 0xa7dc, 1},
	},
	R32: []unicode.Range32{
		{0x105c0, 0x105f3, 1},
		{0x10d4a, 0x10d65, 1},
		{0x10d6f, 0x10d85, 1},
		{0x10ec2, 0x10ec4, 1},
		{0x11380, 0x11389, 1},
		{0x1138b, 0x1138b, 1},
		{0x1138e, 0x1138e, 1},
		{0x11390, 0x113b5, 1},
		{0x113b7, 0x113b7, 1},
		{0x113d1, 0x113d1, 1},
		{0x113d3, 0x113d3, 1},
		{0x11bc0, 0x11be0, 1},
		{0x13460, 0x143fa, 1},
		{0x16100, 0x1611d, 1},
		{0x16d40, 0x16d6c, 1},
		{0x18cff, 0x18cff, 1},
		{0x1e5d0, 0x1e5ed, 1},
		{0x1e5f0, 0x1e5f0, 1},
		{0x2ebf0, 0x2ee5d, 1},
	},
}

// numbers16: \p{N} (all \p{Nd}) added in Unicode 16.0.
var numbers16 = &unicode.RangeTable{
	R32: []unicode.Range32{
		{0x10d40, 0x10d49, 1},
		{0x116d0, 0x116e3, 1},
		{0x11bf0, 0x11bf9, 1},
		{0x16130, 0x16139, 1},
		{0x16d70, 0x16d79, 1},
		{0x1ccf0, 0x1ccf9, 1},
		{0x1e5f1, 0x1e5fa, 1},
	},
}
