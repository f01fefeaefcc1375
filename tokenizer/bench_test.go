package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// heldOutCode reads shared/data/code-heldout.txt (held-out Go source), or skips.
func heldOutCode(b *testing.B) string {
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", "code-heldout.txt"))
	if err != nil {
		b.Skipf("held-out code not found: %v", err)
	}
	return string(data)
}

// benchEncode reports tokens/s for encoding the whole text per iteration (the word cache is
// warm after the first).
func benchEncode(b *testing.B, tok *Tokenizer, text string) {
	ids := tok.EncodeAppend(nil, text)
	n := len(ids)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		ids = tok.EncodeAppend(ids[:0], text)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkEncodeTiny(b *testing.B)  { benchEncode(b, loadTiny(b), heldOutCode(b)) }
func BenchmarkEncodeQwen3(b *testing.B) { benchEncode(b, loadQwen3(b), heldOutCode(b)) }

// BenchmarkEncodeQwen3Cold encodes with an empty word cache each time.
func BenchmarkEncodeQwen3Cold(b *testing.B) {
	tok, text := loadQwen3(b), heldOutCode(b)
	text = text[:len(text)/8]
	n := len(tok.Encode(text))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		clear(tok.model.cache)
		b.StartTimer()
		tok.Encode(text)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkDecodeQwen3(b *testing.B) {
	tok, text := loadQwen3(b), heldOutCode(b)
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNormalizeNFC compares the NFC normalizer with x/text's on text that is already NFC,
// text to compose and CJK.
func BenchmarkNormalizeNFC(b *testing.B) {
	fr := strings.Repeat("Le café était très animé; les élèves étudiaient à côté de l'hôtel. ", 200)
	texts := []struct{ name, s string }{
		{"french", fr}, {"french-nfd", norm.NFD.String(fr)}, {"cjk", strings.Repeat("日本語のテキスト、漢字。한국어 텍스트입니다. ", 300)},
	}
	for _, tc := range texts {
		b.Run(tc.name+"/forge", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				unicodeForm{norm.NFC}.normalize(tc.s)
			}
		})
		b.Run(tc.name+"/x-text", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				norm.NFC.String(tc.s)
			}
		})
	}
}

// BenchmarkLongWord merges one 1 MB word without spaces (random letters, one letter repeated)
// with the linear merge that long words take and, for comparison, tokenizers' heap merge;
// "encode" is the whole of EncodeStream.
func BenchmarkLongWord(b *testing.B) {
	toks := []struct {
		name string
		load func(testing.TB) *Tokenizer
	}{{"tiny", loadTiny}, {"qwen3", loadQwen3}}
	words := hostileWords(0, 1<<20)
	for _, tk := range toks {
		for _, kind := range []string{"random letters", "one letter"} {
			w := words[kind]
			name := tk.name + "/" + strings.ReplaceAll(kind, " ", "-")
			b.Run(name+"/linear", func(b *testing.B) {
				m := tk.load(b).model
				syms := m.symbols(nil, w)
				scratch := make([]int32, len(syms))
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					m.mergeLinear(append(scratch[:0], syms...), w)
				}
			})
			b.Run(name+"/heap", func(b *testing.B) {
				m := tk.load(b).model
				syms := m.symbols(nil, w)
				scratch := make([]int32, len(syms))
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					m.mergeHeap(append(scratch[:0], syms...))
				}
			})
			b.Run(name+"/encode", func(b *testing.B) {
				tok := tk.load(b)
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					tok.EncodeStream(w, func([]int) error { return nil })
				}
			})
		}
	}
}
