package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// bpe is the byte-level BPE model. Words arrive as raw bytes; byte b stands for the vocabulary
// token byteRunes[b]. Merges are looked up by the pair of ids of their two parts.
type bpe struct {
	vocab    map[string]int32  // token (in the byte alphabet) → id
	tokens   []string          // id → token; "" where the vocabulary has no such id
	merges   map[uint64]uint64 // pairKey(left, right) → rank<<32 | id of the merged token
	byRank   []mergeRule       // rank → merge
	monotone bool              // merges rank after the merges making their parts (bpe_linear.go)

	byteID       [256]int32 // id of byte b's one-rune token, or -1
	fallbackID   [256]int32 // id of "<0xXX>" for byte_fallback, or -1
	unk          int32      // id of unk_token, or -1
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool

	mu    sync.RWMutex
	cache map[string][]int32 // word → ids, for words up to maxCachedWord bytes

	pairsOnce sync.Once
	pairs     *[1 << 16]uint32 // bytePairRanks
	heads     sync.Pool        // *[]int32: mergeLinear's bucket heads, one a rank, all empty
}

const (
	maxCachedWord = 256     // as tokenizers' BPE cache (MAX_LENGTH)
	maxCacheSize  = 1 << 18 // entries; the cache is dropped when it grows past this
	heapMergeLen  = 64      // words with more symbols than this merge with the heap...
	linearLen     = 1 << 12 // ... or, with more than this and monotone merges, linearly
)

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// pairRank returns the rank of the merge of a and b, or noRank.
func (m *bpe) pairRank(a, b int32) uint32 {
	if v, ok := m.merges[pairKey(a, b)]; ok {
		return uint32(v >> 32)
	}
	return noRank
}

// word returns the ids of one pre-tokenized word (raw bytes), in buf when it is large enough.
// The result may also be a cache entry: the caller reads it before the next call and never
// writes it.
func (m *bpe) word(buf []int32, word string) []int32 {
	if len(word) == 1 && m.byteID[word[0]] >= 0 {
		return append(buf[:0], m.byteID[word[0]])
	}
	if m.ignoreMerges {
		var tb [128]byte
		if id, ok := m.vocab[string(byteLevelEncode(tb[:0], word))]; ok {
			return append(buf[:0], id)
		}
	}
	cacheable := len(word) <= maxCachedWord
	if cacheable {
		m.mu.RLock()
		ids, ok := m.cache[word]
		m.mu.RUnlock()
		if ok {
			return ids
		}
	}
	if cap(buf) < len(word) {
		buf = make([]int32, 0, len(word)) // one symbol a byte but with byte_fallback
	}
	syms := m.symbols(buf[:0], word)
	switch {
	case len(syms) <= heapMergeLen:
		syms = m.mergeScan(syms)
	case len(syms) > linearLen && m.monotone:
		syms = m.mergeLinear(syms, word)
	default:
		syms = m.mergeHeap(syms)
	}
	if cacheable {
		ids := append([]int32(nil), syms...)
		m.mu.Lock()
		if len(m.cache) >= maxCacheSize {
			clear(m.cache)
		}
		m.cache[word] = ids
		m.mu.Unlock()
	}
	return syms
}

// symbols maps each byte of word to its token, as tokenizers' BPE::merge_word does for each
// character of the byte-level word: the vocabulary token, else with byte_fallback the
// "<0xXX>" tokens of the character's UTF-8 bytes, else unk_token (fused if fuse_unk), else
// nothing.
func (m *bpe) symbols(dst []int32, word string) []int32 {
	unkPending := false
	for i := 0; i < len(word); i++ {
		if id := m.byteID[word[i]]; id >= 0 {
			if unkPending {
				dst = append(dst, m.unk)
				unkPending = false
			}
			dst = append(dst, id)
			continue
		}
		if m.byteFallback {
			var enc [utf8.UTFMax]byte
			n := utf8.EncodeRune(enc[:], byteRunes[word[i]])
			ok := true
			for _, b := range enc[:n] {
				ok = ok && m.fallbackID[b] >= 0
			}
			if ok {
				for _, b := range enc[:n] {
					dst = append(dst, m.fallbackID[b])
				}
				continue
			}
		}
		if m.unk >= 0 {
			if unkPending && !m.fuseUnk {
				dst = append(dst, m.unk)
			}
			unkPending = true
		}
	}
	if unkPending {
		dst = append(dst, m.unk)
	}
	return dst
}

// mergeScan applies merges lowest rank first, leftmost first among equal ranks, by scanning a
// rank per adjacent pair (O(n²) comparisons, O(n) lookups): the fast path for short words.
func (m *bpe) mergeScan(syms []int32) []int32 {
	if len(syms) < 2 {
		return syms
	}
	const none = ^uint64(0)
	var buf [64]uint64
	ranks := buf[:0]
	for i := 0; i+1 < len(syms); i++ {
		ranks = append(ranks, m.rank(syms[i], syms[i+1], none))
	}
	for {
		best, bi := none, -1
		for i, r := range ranks {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			return syms
		}
		syms[bi] = int32(uint32(best))
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1] = m.rank(syms[bi-1], syms[bi], none)
		}
		if bi < len(ranks) {
			ranks[bi] = m.rank(syms[bi], syms[bi+1], none)
		}
	}
}

func (m *bpe) rank(a, b int32, none uint64) uint64 {
	if v, ok := m.merges[pairKey(a, b)]; ok {
		return v
	}
	return none
}

// mergeHeap gives the same result as mergeScan in O(n log n), as tokenizers' Word::merge_all:
// a priority queue of candidate merges ordered by (rank, position) over a linked list of
// symbols, skipping entries made stale by earlier merges.
func (m *bpe) mergeHeap(syms []int32) []int32 {
	n := len(syms)
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	h := make(mergeQueue, 0, n)
	push := func(pos int32) {
		if nx := next[pos]; nx >= 0 {
			if r := m.pairRank(syms[pos], syms[nx]); r != noRank {
				h.push(uint64(r)<<32 | uint64(pos))
			}
		}
	}
	for i := range n - 1 {
		push(int32(i))
	}
	for len(h) > 0 {
		top := h.pop()
		pos, r := int32(uint32(top)), top>>32
		nx := next[pos]
		if syms[pos] < 0 || nx < 0 {
			continue
		}
		v, ok := m.merges[pairKey(syms[pos], syms[nx])]
		if !ok || v>>32 != r {
			continue // stale: one side has merged since this entry was queued
		}
		syms[pos] = int32(uint32(v))
		syms[nx] = -1
		next[pos] = next[nx]
		if nn := next[nx]; nn >= 0 {
			prev[nn] = pos
		}
		if pv := prev[pos]; pv >= 0 {
			push(pv)
		}
		push(pos)
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

// mergeQueue is a binary min-heap of candidate merges rank<<32 | position, so ordered by rank
// and then position.
type mergeQueue []uint64

func (h *mergeQueue) push(x uint64) {
	*h = append(*h, x)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if q[i] >= q[p] {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *mergeQueue) pop() uint64 {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(q) && q[l] < q[min] {
			min = l
		}
		if r < len(q) && q[r] < q[min] {
			min = r
		}
		if min == i {
			break
		}
		q[i], q[min] = q[min], q[i]
		i = min
	}
	*h = q
	return top
}
