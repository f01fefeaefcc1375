package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestLossy checks U+FFFD substitution of maximal ill-formed subparts against Python's
// bytes.decode("utf-8", "replace"), which follows the same Unicode practice as Rust's
// from_utf8_lossy.
func TestLossy(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Hello\xF0\x90\x80World", "Hello\uFFFDWorld"},
		{"\xE2\x82", "\uFFFD"},
		{"\xC0\x80", "\uFFFD\uFFFD"},
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xF4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xF0\x9F\x98A", "\uFFFDA"},
		{"\xE0\x80\xAF", "\uFFFD\uFFFD\uFFFD"},
		{"a\xFFb\xFE", "a\uFFFDb\uFFFD"},
		{"\xF0\x9F\x98\x80", "😀"},
		{"\xC3", "\uFFFD"},
	}
	for _, tc := range tests {
		if got := string(appendLossy(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tok := loadTiny(t)
	for _, id := range []int{-1, 4105, 1 << 40} {
		if _, err := tok.Decode([]int{1, id}); err == nil {
			t.Errorf("Decode(%d): no error", id)
		}
	}
	if s := tok.NewStream().Add(-1); s != "" {
		t.Errorf("Stream.Add(-1) = %q", s)
	}
}

// TestStream feeds random ids, many of them partial UTF-8 byte tokens, one at a time: every
// chunk must be valid UTF-8 and the chunks must add up to Decode.
func TestStream(t *testing.T) {
	tok := loadTiny(t)
	r := rand.New(rand.NewPCG(5, 6))
	text := "naïve 日本語 😀👍🏽 ∑x² — done"
	for trial := range 2000 {
		var ids []int
		if trial%2 == 0 {
			ids = tok.Encode(text[:r.IntN(len(text)+1)])
		}
		for range r.IntN(12) {
			ids = append(ids, r.IntN(tok.VocabSize()))
		}
		s := tok.NewStream()
		var b strings.Builder
		for _, id := range ids {
			chunk := s.Add(id)
			if !utf8.ValidString(chunk) {
				t.Fatalf("ids %v: chunk %q is not valid UTF-8", ids, chunk)
			}
			b.WriteString(chunk)
		}
		b.WriteString(s.Flush())
		if want := mustDecode(t, tok, ids); b.String() != want {
			t.Fatalf("ids %v: stream %q, Decode %q", ids, b.String(), want)
		}
	}
}

// TestStreamHoldsPartial: a character split over tokens appears once it completes.
func TestStreamHoldsPartial(t *testing.T) {
	tok := loadTiny(t)
	byteTok := func(b byte) int {
		id, _ := tok.TokenID(string(byteRunes[b]))
		return id
	}
	s := tok.NewStream()
	for i, want := range []string{"", "", "", "😀"} {
		if got := s.Add(byteTok("😀"[i])); got != want {
			t.Errorf("byte %d: got %q, want %q", i, got, want)
		}
	}
	s.Add(byteTok(0xE6))
	if got := s.Flush(); got != "\uFFFD" {
		t.Errorf("Flush = %q", got)
	}
}

// TestRoundTrip decodes the encoding of the held-out texts (when present) and of tricky strings.
func TestRoundTrip(t *testing.T) {
	texts := []string{"", " ", "\n", "a\x00b", "<|im_start|>user\nhi<|im_end|>", "<|im_end", "e\u0301", "\u00a0\u2028\u3000"}
	for _, name := range []string{"code-heldout.txt", "prose-heldout.txt"} {
		if data, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", name)); err == nil {
			texts = append(texts, string(data[:min(len(data), 300000)]))
		}
	}
	toks := []*Tokenizer{loadTiny(t)}
	if findQwen3Dir() != "" {
		toks = append(toks, loadQwen3(t))
	}
	for _, tok := range toks {
		for _, s := range texts {
			if got := mustDecode(t, tok, tok.Encode(s)); got != normalized(tok, s) {
				t.Errorf("round trip of %.40q… differs", s)
			}
		}
	}
}

// FuzzEncode: any bytes encode without panic and decode to the input (for valid UTF-8) or to
// its lossy form (invalid bytes become U+FFFD); the stream agrees with Decode.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"Hello, world!", "\tfunc main() {\n}", "<|im_start|>x<|im_end|>", "日本語 😀", "\xff\xfe", "a  \n\n b", "it'S"} {
		f.Add(s)
	}
	tok := loadTiny(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		want := string(appendLossy(nil, []byte(s)))
		if got != want {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		st := tok.NewStream()
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(st.Add(id))
		}
		if b.WriteString(st.Flush()); b.String() != got {
			t.Fatalf("stream %q, Decode %q", b.String(), got)
		}
	})
}

func TestRandomRoundTrip(t *testing.T) {
	tok := loadTiny(t)
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		s := randomText(r, r.IntN(30))
		if got := mustDecode(t, tok, tok.Encode(s)); got != string(appendLossy(nil, []byte(s))) {
			t.Fatalf("%q → %q", s, got)
		}
	}
}

// randomUnicode returns n random scalar values drawn from every plane, with extra weight on
// ASCII, whitespace, combining marks, Hangul jamo, CJK and the added tokens' characters.
func randomUnicode(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		var c rune
		switch k := r.IntN(10); {
		case k < 3:
			c = rune(r.IntN(0x80))
		case k == 3:
			c = []rune{' ', '\t', '\n', '\r', '\v', '\f', 0x85, 0xA0, 0x2028, 0x3000, 0x1C, 0x200B, 0xFEFF}[r.IntN(13)]
		case k == 4:
			c = 0x300 + rune(r.IntN(0x70)) // combining diacritics
		case k == 5:
			c = []rune{0x1100, 0x1161, 0x11A8, 0xAC00, 0x1AC1, 0x0F73, 0x11930, 0x11935, 0x2EBF0, 0x1E5F1}[r.IntN(10)]
		case k == 6:
			c = 0x4E00 + rune(r.IntN(0x5200))
		case k == 7:
			if r.IntN(2) == 0 {
				b.WriteString([]string{"<|im_start|>", "<|im_end|>", "<think>", "</think>", "'s", "'LL", "\r\n"}[r.IntN(7)])
				continue
			}
			c = 0x80 + rune(r.IntN(0x780))
		default:
			for c = rune(r.IntN(0x110000)); !utf8.ValidRune(c); c = rune(r.IntN(0x110000)) {
			}
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestRandomUnicodeRoundTrip: Decode(Encode(x)) is x (normalized, for Qwen3's NFC) for random
// valid UTF-8 from every plane.
func TestRandomUnicodeRoundTrip(t *testing.T) {
	toks := []*Tokenizer{loadTiny(t)}
	if findQwen3Dir() != "" {
		toks = append(toks, loadQwen3(t))
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		s := randomUnicode(r, r.IntN(60))
		for _, tok := range toks {
			if got, want := mustDecode(t, tok, tok.Encode(s)), normalized(tok, s); got != want {
				t.Fatalf("%+q → %+q, want %+q", s, got, want)
			}
		}
	}
}

// FuzzEncodeQwen3: for valid UTF-8, Qwen3's Decode(Encode(s)) is the NFC of s, and NFC is
// idempotent and keeps the text canonically equivalent.
func FuzzEncodeQwen3(f *testing.F) {
	for _, s := range []string{"Hello, world!", "e\u0301\u0316", "\u1100\u1161\u11a8", "<|im_start|>x\u0338", "\u0369\u1aca", "\U0002EBF0's"} {
		f.Add(s)
	}
	tok := loadQwen3(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		n := normalized(tok, s)
		if got := mustDecode(t, tok, tok.Encode(s)); got != n {
			t.Fatalf("Decode(Encode(%+q)) = %+q, want %+q", s, got, n)
		}
		if nn := normalized(tok, n); nn != n {
			t.Fatalf("NFC not idempotent: %+q → %+q → %+q", s, n, nn)
		}
		if norm.NFD.String(n) != norm.NFD.String(s) && !strings.ContainsFunc(s, func(r rune) bool { return isCanonInert(r) }) {
			t.Fatalf("NFC(%+q) = %+q is not canonically equivalent", s, n)
		}
	})
}

// TestConcurrentEncode shares one tokenizer (and its word cache) between goroutines.
func TestConcurrentEncode(t *testing.T) {
	tok := loadTiny(t)
	r := rand.New(rand.NewPCG(9, 10))
	texts := make([]string, 64)
	want := make([][]int, len(texts))
	for i := range texts {
		texts[i] = randomText(r, 200)
		want[i] = slices.Clone(tok.Encode(texts[i]))
	}
	clear(tok.model.cache)
	done := make(chan error)
	for g := range 4 {
		go func() {
			for k := range texts {
				i := (k + g*16) % len(texts)
				if got := tok.Encode(texts[i]); !slices.Equal(got, want[i]) {
					done <- fmt.Errorf("text %d differs", i)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
