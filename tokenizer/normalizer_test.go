package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestNormalizeLikeTokenizers: outputs of tokenizers 0.23.2's normalizers (its Node binding's
// nfcNormalizer().normalizeString and the like), where x/text's differ: runs of more than 30
// combining marks (x/text inserts U+034F and stops reordering), marks and composites newer than
// Unicode 9.0 (plain starters to tokenizers).
func TestNormalizeLikeTokenizers(t *testing.T) {
	acute, grave := strings.Repeat("\u0301", 30), strings.Repeat("\u0316", 33)
	tests := []struct {
		form     norm.Form
		in, want string
	}{
		{norm.NFC, "e\u0301" + acute, "\u00e9" + acute},
		{norm.NFC, "a" + acute + "\u0316", "\u00e1\u0316" + acute[2:]},
		{norm.NFD, "a" + acute + "\u0316", "a\u0316" + acute},
		{norm.NFC, "A\u030a" + grave, "\u00c5" + grave},
		{norm.NFC, "\u0369\u1aca", "\u0369\u1aca"},
		{norm.NFD, "\u0369\u1aca", "\u0369\u1aca"},
		{norm.NFC, "e\u1ac1\u0316\u0301", "e\u1ac1\u0316\u0301"},
		{norm.NFC, "\U00011935\U00011930", "\U00011935\U00011930"},
		{norm.NFD, "\U00011938", "\U00011938"},
		{norm.NFKC, "\U0001fbf5\u32ff\U0001e030", "\U0001fbf5\u32ff\U0001e030"},
		{norm.NFKD, "\ufdfaA\u030a\u1e9b\u0323", "\u0635\u0644\u0649 \u0627\u0644\u0644\u0647 \u0639\u0644\u064a\u0647 \u0648\u0633\u0644\u0645A\u030as\u0323\u0307"},
		{norm.NFC, "\u1100\u1161\u11a8\uac00\u11a8\u1100\u0301\u1161", "\uac01\uac01\u1100\u0301\u1161"},
		{norm.NFC, "\u0b47\u0b3e\u0cc6\u0cd5\u304b\u3099\u2126\u212b\u0344", "\u0b4b\u0cc7\u304c\u03a9\u00c5\u0308\u0301"},
		{norm.NFC, "e\xff\u0301\xc3", "e\xff\u0301\xc3"}, // invalid bytes pass through and separate
	}
	for _, tc := range tests {
		if got := (unicodeForm{tc.form}).normalize(tc.in); got != tc.want {
			t.Errorf("%v(%+q) = %+q, want %+q", tc.form, tc.in, got, tc.want)
		}
	}
}

// TestNormalizeTwin: away from long mark runs and post-9.0 runes, the rune-by-rune path agrees
// with x/text.
func TestNormalizeTwin(t *testing.T) {
	pool := []string{"a", "e", "A", "K", "s", " ", "\u00a0", "\u00c5", "\u0301", "\u0316", "\u0327", "\u0334", "\u0345", "\u0344",
		"\u05b4", "\u093c", "\u0b47", "\u0b3e", "\u1100", "\u1161", "\u11a8", "\uac00", "\u304b", "\u3099", "\u2126", "\u212b",
		"\u1e9b", "\u0323", "\ufb01", "\u2460", "\u00bd", "\ufdfa", "\u0f73", "\u0f75", "\u0f81", "\U0001d15e", "\U000110ab", "\u1fc1"}
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
		u := unicodeForm{f}
		for range 3000 {
			var b strings.Builder
			for range 1 + r.IntN(12) {
				b.WriteString(pool[r.IntN(len(pool))])
			}
			s := b.String()
			if got, want := u.slow(s), f.String(s); got != want {
				t.Fatalf("%v(%+q) = %+q, x/text %+q", f, s, got, want)
			}
			if got, want := u.normalize(s), f.String(s); got != want {
				t.Fatalf("%v(%+q) = %+q, x/text %+q", f, s, got, want)
			}
		}
	}
}

// TestUnicodeVersions: unicode16.go holds the differences between tokenizers' Unicode data and
// Go's 15.0; newer Go tables need them derived again.
func TestUnicodeVersions(t *testing.T) {
	if unicode.Version != "15.0.0" || norm.Version != "15.0.0" {
		t.Fatalf("Go's Unicode tables are %s, x/text's %s: derive unicode16.go again against tokenizers", unicode.Version, norm.Version)
	}
	for _, r := range []rune{0x1C89, 0x2EBF0, 0x2EE5D, 0x13460, 0x143FA} {
		if cl, _ := classAt(string(r), 0); cl != clLetter {
			t.Errorf("U+%04X: class %d, want a letter", r, cl)
		}
	}
	for _, r := range []rune{0x10D40, 0x1E5FA} {
		if cl, _ := classAt(string(r), 0); cl != clNumber {
			t.Errorf("U+%04X: class %d, want a number", r, cl)
		}
	}
	// Unicode 17.0's additions are not letters to tokenizers 0.23 (Oniguruma 6.9.10).
	if cl, _ := classAt(string(rune(0x323B0)), 0); cl != 0 {
		t.Errorf("U+323B0: class %d, want none", cl)
	}
}

// TestInertShortcut: the ranges that inert skips hold no rune of canonInert or compatInert.
func TestInertShortcut(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := isCanonInert(r) || isCompatInert(r)
		if got := (unicodeForm{norm.NFKC}).inert(r); got != want {
			t.Fatalf("U+%04X: inert %v, tables %v", r, got, want)
		}
		if got := (unicodeForm{norm.NFC}).inert(r); got != isCanonInert(r) {
			t.Fatalf("U+%04X: canonical inert %v, table %v", r, got, isCanonInert(r))
		}
	}
}

// TestHasInert: the lead-byte shortcuts of hasInert miss no inert rune.
func TestHasInert(t *testing.T) {
	for _, u := range []unicodeForm{{norm.NFC}, {norm.NFKC}} {
		for r := rune(0x80); r <= unicode.MaxRune; r++ {
			if !utf8.ValidRune(r) {
				continue
			}
			if got, want := u.hasInert("a"+string(r)+"b"), u.inert(r); got != want {
				t.Fatalf("%v: hasInert(U+%04X) = %v, want %v", u.f, r, got, want)
			}
		}
	}
}

// TestCompositeTable: every pair composes, with x/text, into its composite, and there are
// Unicode 9.0's 940 primary composites.
func TestCompositeTable(t *testing.T) {
	m := compositeTable()
	for k, x := range m {
		a, b := rune(k>>32), rune(uint32(k))
		if got := norm.NFC.String(string(a) + string(b)); got != string(x) {
			t.Errorf("U+%04X U+%04X → %+q, table U+%04X", a, b, got, x)
		}
	}
	if len(m) != 940 {
		t.Errorf("%d composites, want 940", len(m))
	}
}
