package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
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
