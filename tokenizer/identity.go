package tokenizer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
)

// Fingerprint identifies the tokenizer's id space: a SHA-256 (first 16
// hex digits) over every id's token string and special flag and the EOS
// ids. Two tokenizers with the same fingerprint give every id the same
// meaning, which is what a drafter must share with its target
// (speculative decoding); how text is split (merges, normalization) is
// not part of it, since a drafter only reads the target's ids.
func (t *Tokenizer) Fingerprint() string {
	h := sha256.New()
	var n [8]byte
	put := func(v int) { binary.LittleEndian.PutUint64(n[:], uint64(v)); h.Write(n[:]) }
	put(t.vocabSize)
	for id := range t.vocabSize {
		tok, ok := t.tokenString(id)
		switch {
		case !ok:
			put(-1)
		case t.special[id]:
			put(-2 - len(tok))
		default:
			put(len(tok))
		}
		h.Write([]byte(tok))
	}
	for _, id := range t.specials.eos {
		put(id)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// SameIDs reports how other gives an id a different meaning than t
// (nil when they agree on every id): another vocabulary size, the first
// id whose token or special flag differs, or other EOS ids.
func (t *Tokenizer) SameIDs(other *Tokenizer) error {
	if t.vocabSize != other.vocabSize {
		return fmt.Errorf("%d token ids against %d", other.vocabSize, t.vocabSize)
	}
	for id := range t.vocabSize {
		a, okA := t.tokenString(id)
		b, okB := other.tokenString(id)
		if a != b || okA != okB || t.special[id] != other.special[id] {
			return fmt.Errorf("token %d is %q against %q", id, b, a)
		}
	}
	if !slices.Equal(t.specials.eos, other.specials.eos) {
		return fmt.Errorf("end-of-sequence ids %v against %v", other.specials.eos, t.specials.eos)
	}
	return nil
}
