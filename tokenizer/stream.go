package tokenizer

// Stream decodes ids one at a time for token-by-token output. Add returns only complete
// UTF-8: bytes of a character split across tokens are held until it completes. The
// concatenation of everything Add and Flush return equals Decode of all the ids. A Stream is
// not safe for concurrent use.
type Stream struct {
	t       *Tokenizer
	pending []byte // bytes of an incomplete but so far well-formed UTF-8 sequence
	out     []byte
}

// NewStream returns a streaming decoder.
func (t *Tokenizer) NewStream() *Stream { return &Stream{t: t} }

// Add decodes id and returns the text that is now complete. Ids outside the vocabulary add
// nothing (Decode reports them as errors).
func (s *Stream) Add(id int) string {
	b, ok := s.t.tokenBytes(id)
	if !ok {
		return ""
	}
	if len(s.pending) == 0 && isASCII(b) {
		return string(b)
	}
	s.pending = append(s.pending, b...)
	out := s.out[:0]
	p := s.pending
	for len(p) > 0 {
		if p[0] < 0x80 {
			out = append(out, p[0])
			p = p[1:]
			continue
		}
		n, ok, partial := utf8Seq(p)
		switch {
		case ok:
			out = append(out, p[:n]...)
		case partial:
			s.pending = append(s.pending[:0], p...)
			s.out = out
			return string(out)
		default:
			out = append(out, "\uFFFD"...)
		}
		p = p[n:]
	}
	s.pending = s.pending[:0]
	s.out = out
	return string(out)
}

// Flush returns what is held back (an incomplete character becomes U+FFFD) and resets the
// stream.
func (s *Stream) Flush() string {
	out := string(appendLossy(nil, s.pending))
	s.pending = s.pending[:0]
	return out
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
