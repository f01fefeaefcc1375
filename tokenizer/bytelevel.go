package tokenizer

import "unicode/utf8"

// byteRunes[b] is the printable rune that GPT-2's bytes_to_unicode assigns to byte b:
// '!'..'~', '¡'..'¬' and '®'..'ÿ' map to themselves, the other 68 bytes to U+0100.. in order.
// Byte-level BPE vocabularies are written in this alphabet.
var byteRunes = func() (t [256]rune) {
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

// runeBytes inverts byteRunes: runeBytes[r] = b+1 where byteRunes[b] == r, 0 for other runes.
var runeBytes = func() (t [324]uint16) {
	for b, r := range byteRunes {
		t[r] = uint16(b) + 1
	}
	return t
}()

// byteLevelDecode maps a vocabulary token back to raw bytes the way the ByteLevel decoder does:
// every rune through the inverse byte alphabet, or, when some rune is not in that alphabet
// (added tokens such as "<|im_end|>" are, tokens with other characters are not), the token's
// own UTF-8 bytes.
func byteLevelDecode(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeBytes) || runeBytes[r] == 0 {
			return append(dst[:start], tok...)
		}
		dst = append(dst, byte(runeBytes[r]-1))
	}
	return dst
}

// byteLevelEncode writes s in the byte alphabet (the ByteLevel pre-tokenizer's output).
func byteLevelEncode(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, byteRunes[s[i]])
	}
	return dst
}

// utf8Seq classifies the UTF-8 sequence at the start of b (len(b) > 0) following Unicode's
// table 3-7 of well-formed byte sequences. It returns the sequence length n when ok; otherwise
// n is the length of the maximal ill-formed subpart, and partial reports that b ends before a
// sequence that is well formed so far could complete.
func utf8Seq(b []byte) (n int, ok, partial bool) {
	c := b[0]
	if c < 0x80 {
		return 1, true, false
	}
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the second byte
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1, false, false
	}
	for k := 1; k <= need; k++ {
		if k >= len(b) {
			return k, false, true
		}
		if b[k] < lo || b[k] > hi {
			return k, false, false
		}
		lo, hi = 0x80, 0xBF
	}
	return need + 1, true, false
}

// appendLossy appends b to dst with every maximal ill-formed subpart replaced by U+FFFD,
// which is what Rust's String::from_utf8_lossy (and so Hugging Face's ByteLevel decoder) does.
func appendLossy(dst, b []byte) []byte {
	for len(b) > 0 {
		if b[0] < 0x80 {
			dst = append(dst, b[0])
			b = b[1:]
			continue
		}
		n, ok, _ := utf8Seq(b)
		if ok {
			dst = append(dst, b[:n]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		b = b[n:]
	}
	return dst
}
