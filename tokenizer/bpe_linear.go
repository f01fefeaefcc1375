package tokenizer

// The linear merge of long words.
//
// tokenizers' Word::merge_all (mergeHeap) pops candidate merges from a binary heap ordered by
// (rank, position): O(n log n) time and 16 bytes a candidate on top of a linked list. Trained
// vocabularies have a property that allows a linear algorithm: a merge whose part was itself
// made by a merge ranks after that merge (a token exists before merges using it are learned).
// Then every pair formed by a merge of rank r ranks above r, so ranks are merged in
// non-decreasing order and every merge of rank r is the same pair (A, B). Occurrences of A B
// with A ≠ B do not overlap and can merge in any order; runs of A A merge pairwise from the
// left of each run, as the heap's position order does. parseMerges checks the property
// (bpe.monotone); without it, long words keep the heap.
//
// mergeLinear keeps, per symbol position, the token (or a link, see below) and the rank of the
// pair starting there, and groups positions into blocks of blockSize: a bucket per rank lists
// the blocks that may hold a pair of that rank. Rank by rank, each listed block is scanned and
// its pairs of that rank merged, then it is listed again under the smallest rank it still
// holds. A block's listed rank may lag below its true minimum (raising it is left to the next
// scan), never above. Work: O(n·blockSize + number of ranks); memory: 8 bytes a symbol and
// 12 bytes a block.

const (
	noRank    = ^uint32(0)
	blockBits = 4
	blockSize = 1 << blockBits
)

// mergeRule is one merge: left and right parts, the merged token; left < 0 for a rank that a
// later repetition of the same pair replaced.
type mergeRule struct{ left, right, id int32 }

// checkMonotone reports whether every merge ranks after all merges whose result is one of its
// parts, which mergeLinear relies on.
func checkMonotone(byRank []mergeRule, vocabSize int) bool {
	made := make([]int32, vocabSize) // 1 + the highest rank of a merge making the token
	for r, mg := range byRank {
		if mg.left >= 0 {
			made[mg.id] = int32(r) + 1
		}
	}
	for r, mg := range byRank {
		if mg.left >= 0 && (made[mg.left] > int32(r) || made[mg.right] > int32(r)) {
			return false
		}
	}
	return true
}

// linearMerge is the state of mergeLinear on one word of n symbols.
//
// A live symbol spans cells [s, e): cell s holds its token id (>= 0); when e-s >= 2 cell e-1
// holds ^s, and when e-s >= 3 cell s+1 holds ^e; the other cells hold negative values that are
// never read. So next and prev are O(1) with one int32 a position.
type linearMerge struct {
	m    *bpe
	id   []int32  // cells, as above
	rank []uint32 // rank of the pair starting at a live symbol; noRank for none and elsewhere

	head     []int32  // rank → first block of its bucket + 1, 0 when empty (from m.heads)
	listed   int      // blocks in buckets
	bnext    []int32  // block → next block in its bucket + 1, 0 at the end
	bprev    []int32  // block → previous block in its bucket + 1; stale for the first
	bmin     []uint32 // block → rank of the bucket it is in, or noRank when in none
	visiting int      // the block being scanned (in no bucket), or -1

	work int // cells scanned plus merges, for tests of linearity
}

// mergeLinear gives the same result as mergeHeap in O(n) time for a monotone vocabulary. It
// reuses syms, the symbols of word, for the result.
func (m *bpe) mergeLinear(syms []int32, word string) []int32 {
	if len(syms) < 2 {
		return syms
	}
	x := m.newLinearMerge(syms, word)
	x.run()
	return x.result()
}

// newLinearMerge sets up the merge of syms (at least 2), the symbols of word.
func (m *bpe) newLinearMerge(syms []int32, word string) *linearMerge {
	nb := (len(syms) + blockSize - 1) >> blockBits
	x := &linearMerge{
		m: m, id: syms, rank: make([]uint32, len(syms)),
		bnext: make([]int32, nb), bprev: make([]int32, nb), bmin: make([]uint32, nb),
		visiting: -1,
	}
	if h, ok := m.heads.Get().(*[]int32); ok {
		x.head = *h
	} else {
		x.head = make([]int32, len(m.byRank))
	}
	x.initRanks(word)
	return x
}

// initRanks sets the rank of every adjacent pair, from the byte pair table when the symbols
// are the word's bytes' tokens.
func (x *linearMerge) initRanks(word string) {
	n := len(x.id)
	x.rank[n-1] = noRank
	if n == len(word) && x.m.byteTokens(word) {
		t := x.m.bytePairRanks()
		for i := range n - 1 {
			x.rank[i] = t[uint16(word[i])<<8|uint16(word[i+1])]
		}
		return
	}
	for i := range n - 1 {
		x.rank[i] = x.m.pairRank(x.id[i], x.id[i+1])
	}
}

// byteTokens reports whether every byte of word has its own token (so the word's symbols
// are those tokens, one a byte).
func (m *bpe) byteTokens(word string) bool {
	for i := 0; i < len(word); i++ {
		if m.byteID[word[i]] < 0 {
			return false
		}
	}
	return true
}

// bytePairRanks returns the ranks of the merges of byte tokens: [a<<8|b] for the tokens of
// bytes a and b, noRank for none (or a byte without token). It is built on first use.
func (m *bpe) bytePairRanks() *[1 << 16]uint32 {
	m.pairsOnce.Do(func() {
		t := new([1 << 16]uint32)
		for ab := range t {
			t[ab] = noRank
			if a, b := m.byteID[ab>>8], m.byteID[ab&0xFF]; a >= 0 && b >= 0 {
				t[ab] = m.pairRank(a, b)
			}
		}
		m.pairs = t
	})
	return m.pairs
}

// run merges rank by rank until no block is listed; the bucket heads, all empty again, go
// back to m.heads for the next long word.
func (x *linearMerge) run() {
	first := noRank
	for b := range x.bmin {
		x.bmin[b] = noRank
		if r := x.blockMin(b); r != noRank {
			x.link(b, r)
			first = min(first, r)
		}
	}
	for r := int(first); x.listed > 0; r++ {
		for x.head[r] != 0 {
			b := int(x.head[r] - 1)
			x.unlink(b)
			x.visiting = b
			x.visit(b, uint32(r))
			x.visiting = -1
			if next := x.blockMin(b); next != noRank {
				if next <= uint32(r) {
					panic("tokenizer: linear merge met a rank out of order") // checkMonotone rules this out
				}
				x.link(b, next)
			}
		}
	}
	x.m.heads.Put(&x.head)
}

// result compacts the live symbols' ids to the front of the cells.
func (x *linearMerge) result() []int32 {
	out := x.id[:0]
	for c := 0; c < len(x.id); c = x.next(c) {
		out = append(out, x.id[c]) // writes at or before c, reads after
	}
	return out
}

func (x *linearMerge) next(c int) int {
	if c+1 >= len(x.id) {
		return len(x.id)
	}
	v := x.id[c+1]
	switch {
	case v >= 0:
		return c + 1
	case int(^v) == c: // a two-cell symbol's back link
		return c + 2
	}
	return int(^v)
}

func (x *linearMerge) prev(c int) int {
	if c == 0 {
		return -1
	}
	if v := x.id[c-1]; v < 0 {
		return int(^v)
	}
	return c - 1
}

// blockMin returns the smallest rank of a pair starting in block b.
func (x *linearMerge) blockMin(b int) uint32 {
	lo, hi := b<<blockBits, min((b+1)<<blockBits, len(x.id))
	x.work += hi - lo
	r := noRank
	for _, rc := range x.rank[lo:hi] {
		r = min(r, rc)
	}
	return r
}

// visit merges every pair of rank r that starts in block b, or in a run of the pair's token
// reaching into it.
func (x *linearMerge) visit(b int, r uint32) {
	mg := x.m.byRank[r]
	lo, hi := b<<blockBits, min((b+1)<<blockBits, len(x.id))
	x.work += hi - lo
	for c := lo; c < hi; c++ {
		if x.rank[c] != r {
			continue
		}
		if mg.left != mg.right {
			x.merge(c, mg.id)
			continue
		}
		// A run of A A A ...: merge pairwise from its first symbol, as the heap's position
		// order does (the run may start in an earlier block).
		s := c
		for p := x.prev(s); p >= 0 && x.rank[p] == r; p = x.prev(p) {
			s = p
		}
		for s < len(x.id) && x.rank[s] == r {
			x.merge(s, mg.id)
			s = x.next(s)
		}
	}
}

// merge joins the symbol at s with the next one into token id.
func (x *linearMerge) merge(s int, id int32) {
	x.work++
	t := x.next(s)
	e := x.next(t)
	x.id[t], x.rank[t] = -1, noRank
	x.id[s] = id
	x.id[e-1] = ^int32(s)
	if e-s >= 3 {
		x.id[s+1] = ^int32(e)
	}
	r := noRank
	if e < len(x.id) {
		r = x.m.pairRank(id, x.id[e])
	}
	x.setRank(s, r)
	if p := x.prev(s); p >= 0 {
		x.setRank(p, x.m.pairRank(x.id[p], id))
	}
}

// setRank records the rank of the pair at c and lists c's block under it when that is lower
// than where the block is listed.
func (x *linearMerge) setRank(c int, r uint32) {
	x.rank[c] = r
	b := c >> blockBits
	if b == x.visiting || r >= x.bmin[b] {
		return
	}
	if x.bmin[b] != noRank {
		x.unlink(b)
	}
	x.link(b, r)
}

func (x *linearMerge) link(b int, r uint32) {
	first := x.head[r]
	x.bnext[b] = first
	if first != 0 {
		x.bprev[first-1] = int32(b + 1)
	}
	x.head[r] = int32(b + 1)
	x.bmin[b] = r
	x.listed++
}

// unlink takes b out of its bucket. The first block's bprev is not kept (it is known first
// from head), which spares popping a bucket a write to another block.
func (x *linearMerge) unlink(b int) {
	r, nx := x.bmin[b], x.bnext[b]
	x.bmin[b] = noRank
	x.listed--
	if x.head[r] == int32(b+1) {
		x.head[r] = nx
		return
	}
	p := x.bprev[b]
	x.bnext[p-1] = nx
	if nx != 0 {
		x.bprev[nx-1] = p
	}
}
