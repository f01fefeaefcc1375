package tokenizer

import "golang.org/x/text/unicode/norm"

// normalizer is a tokenizer.json normalizer: NFC, NFD, NFKC, NFKD, or a Sequence of them.
type normalizer interface {
	normalize(s string) string
}

type unicodeForm struct{ f norm.Form }

func (u unicodeForm) normalize(s string) string {
	// Text whose runes are all below U+0300 (no byte >= 0xCC) is in NFC already; the other
	// forms only change characters from U+00A0 on (no byte >= 0xC2).
	limit := byte(0xC2)
	if u.f == norm.NFC {
		limit = 0xCC
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= limit {
			return u.f.String(s)
		}
	}
	return s
}

type sequenceNormalizer []normalizer

func (q sequenceNormalizer) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}
