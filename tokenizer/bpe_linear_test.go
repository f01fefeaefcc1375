package tokenizer

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// realModels returns the BPE models of the tokenizers at hand: forge-tiny and Qwen3.
func realModels(t *testing.T) map[string]*bpe {
	ms := map[string]*bpe{"tiny": loadTiny(t).model}
	if findQwen3Dir() != "" {
		ms["qwen3"] = loadQwen3(t).model
	}
	return ms
}

// checkLinear compares mergeLinear with mergeHeap (tokenizers' algorithm) on word, and with
// mergeScan when the word is short enough for its O(n²).
func checkLinear(t *testing.T, name string, m *bpe, word string) {
	t.Helper()
	syms := m.symbols(nil, word)
	if len(syms) < 2 {
		return
	}
	want := m.mergeHeap(slices.Clone(syms))
	got := m.mergeLinear(slices.Clone(syms), word)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: word of %d bytes %.40q...: linear gives %d ids, heap %d; first difference at id %d",
			name, len(word), word, len(got), len(want), i)
	}
	if len(syms) <= 2000 {
		if scan := m.mergeScan(slices.Clone(syms)); !slices.Equal(scan, want) {
			t.Fatalf("%s: %q: scan %v, heap %v", name, word, scan, want)
		}
	}
}

// hostileWords generates words of the kinds that stress the merge: random letters, runs of
// one letter (equal-rank merges, whose order matters), short patterns repeated, mixed scripts
// with invalid UTF-8 (randomText), random bytes. The letter and the pattern depend on the
// seed only.
func hostileWords(seed uint64, n int) map[string]string {
	r := rand.New(rand.NewPCG(seed, 1))
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	letter := letters[r.IntN(len(letters))]
	pattern := []string{"ab", "abc", "aab", "the", "ing ", "==", "\t\n"}[r.IntN(7)]
	var rnd, bytes strings.Builder
	for range n {
		rnd.WriteByte(letters[r.IntN(len(letters))])
		bytes.WriteByte(byte(r.IntN(256)))
	}
	mixed := randomText(r, n/2+1)
	return map[string]string{
		"random letters": rnd.String(),
		"one letter":     strings.Repeat(string(letter), n),
		"pattern":        strings.Repeat(pattern, n/len(pattern)+1),
		"mixed scripts":  mixed,
		"random bytes":   bytes.String(),
	}
}

// TestMergeLinearTwins checks the linear merge against tokenizers' heap merge on both real
// vocabularies, on hostile words of lengths around the block size and up to 300 KB.
func TestMergeLinearTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lengths := []int{2, 3, 15, 16, 17, 31, 33, 100, 1000, linearLen + 1}
	for range 20 {
		lengths = append(lengths, 2+r.IntN(3000))
	}
	if !testing.Short() {
		lengths = append(lengths, 300_000)
	}
	for name, m := range realModels(t) {
		if !m.monotone {
			t.Fatalf("%s: merges not monotone, long words would not take the linear merge", name)
		}
		for _, n := range lengths {
			for kind, w := range hostileWords(r.Uint64(), n) {
				checkLinear(t, name+" "+kind, m, w)
			}
		}
		for _, n := range []int{2, 3, 4, 5, 16, 17, 32, 33, 63, 64, 65, 257} { // runs across blocks
			checkLinear(t, name+" run", m, "x"+strings.Repeat("a", n)+"yaa"+strings.Repeat("a", n))
		}
	}
}

// FuzzMergeLinear compares the linear merge with the heap merge on both real vocabularies; the
// word is the input repeated up to rep times, to make long words with structure.
func FuzzMergeLinear(f *testing.F) {
	f.Add([]byte("aaaaa"), uint8(40))
	f.Add([]byte("ab"), uint8(200))
	f.Add([]byte("Hello, wörld! 日本語"), uint8(9))
	f.Add([]byte{0xff, 0xc3, 'a', 0xe2, 0x82}, uint8(30))
	f.Fuzz(func(t *testing.T, data []byte, rep uint8) {
		w := strings.Repeat(string(data), 1+int(rep))
		for name, m := range realModels(t) {
			checkLinear(t, name, m, w)
		}
	})
}

// trainToy builds a BPE model the way training does, each merge joining two tokens that exist,
// over the alphabet abc with tokens up to 8 letters; with dup, merges may also make a token that
// exists already (two producers), which can break monotonicity.
func trainToy(t *testing.T, r *rand.Rand, merges int, dup bool) *bpe {
	vocab := map[string]int32{"a": 0, "b": 1, "c": 2}
	toks := []string{"a", "b", "c"}
	seen := map[string]bool{}
	var rules []string
	for tries := 0; len(rules) < merges && tries < 100*merges; tries++ {
		x, y := toks[r.IntN(len(toks))], toks[r.IntN(len(toks))]
		_, exists := vocab[x+y]
		if len(x+y) > 8 || seen[x+" "+y] || exists && !dup {
			continue
		}
		seen[x+" "+y] = true
		rules = append(rules, x+" "+y)
		if !exists {
			vocab[x+y] = int32(len(toks))
			toks = append(toks, x+y)
		}
	}
	return newModel(t, vocab, rules, modelJSON{})
}

// TestMergeLinearToy checks the linear merge on small trained vocabularies, where long words
// over three letters meet deep chains of merges, and that vocabularies with a merge ranked
// before a merge making one of its parts are found not monotone and still merge exactly.
func TestMergeLinearToy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	nonMonotone := 0
	for v := range 60 {
		m := trainToy(t, r, 5+r.IntN(60), v%2 == 1)
		for range 10 {
			n := 2 + r.IntN(600)
			if r.IntN(10) == 0 {
				n = linearLen + r.IntN(3000)
			}
			var b strings.Builder
			for range n {
				b.WriteByte("abc"[r.IntN(min(3, 1+r.IntN(4)))]) // some words favour a, for runs
			}
			w := b.String()
			if m.monotone {
				checkLinear(t, "toy", m, w)
				continue
			}
			syms := m.symbols(nil, w)
			if got, want := m.word(nil, w), m.mergeHeap(syms); !slices.Equal(got, want) {
				t.Fatalf("non-monotone toy: word gives %v, heap %v", got, want)
			}
		}
		if !m.monotone {
			nonMonotone++
		}
	}
	if nonMonotone == 0 {
		t.Error("no toy vocabulary was non-monotone: the fallback went untested")
	}
	// Made by hand: "ab" is made at rank 1, after "x ab" (rank 0) uses it.
	m := newModel(t, map[string]int32{"a": 0, "b": 1, "x": 2, "ab": 3, "xab": 4}, []string{"x ab", "a b"}, modelJSON{})
	if m.monotone {
		t.Error(`merges ["x ab", "a b"] taken for monotone`)
	}
}

// linearWork returns the work counter of the linear merge of word.
func linearWork(m *bpe, word string) int {
	x := m.newLinearMerge(m.symbols(nil, word), word)
	x.run()
	return x.work
}

// TestMergeLinearIsLinear bounds the work of the linear merge (cells scanned plus merges) on
// hostile 1 MB and 4 MB words: at most 40 a byte (measured 3.5 to 12.4: each block is scanned
// about once per rank merged in it), and 4 MB costs at most 4.2 times 1 MB, where even
// O(n log n) would cost 4.4 times.
func TestMergeLinearIsLinear(t *testing.T) {
	for name, m := range realModels(t) {
		small, big := hostileWords(0, 1<<20), hostileWords(0, 4<<20) // 'f', "ab"
		for _, kind := range []string{"random letters", "one letter", "pattern"} {
			w1, w4 := linearWork(m, small[kind]), linearWork(m, big[kind])
			if w1 > 40<<20 || w4 > 40<<22 || float64(w4) > 4.2*float64(w1) {
				t.Errorf("%s %s: work %d for 1 MB, %d for 4 MB", name, kind, w1, w4)
			}
		}
	}
}

// encodeAllocs returns the bytes allocated by EncodeStream on text, the ids discarded.
func encodeAllocs(t *testing.T, tok *Tokenizer, text string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := tok.EncodeStream(text, func([]int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEncodeLongWordMemory bounds what encoding one long word allocates: at most 12 bytes a
// byte of input, the linear merge's 4 (symbol ids) + 4 (pair ranks) + 0.75 (block lists) and
// the per-rank bucket heads; and 4 MB allocates at most 5 times what 1 MB does.
func TestEncodeLongWordMemory(t *testing.T) {
	toks := map[string]*Tokenizer{"tiny": loadTiny(t)}
	if findQwen3Dir() != "" {
		toks["qwen3"] = loadQwen3(t)
	}
	for name, tok := range toks {
		small, big := hostileWords(0, 1<<20), hostileWords(0, 4<<20)
		for _, kind := range []string{"random letters", "one letter"} {
			a1, a4 := encodeAllocs(t, tok, small[kind]), encodeAllocs(t, tok, big[kind])
			if a4 > 12*4<<20 || a4 > 5*a1 {
				t.Errorf("%s %s: allocated %.1f bytes a byte for 4 MB, %.2f times 1 MB's", name, kind, float64(a4)/(4<<20), float64(a4)/float64(a1))
			}
		}
	}
}
