package sample

import "strings"

// breakerChars are the characters that make a token a DRY sequence breaker (the reference's
// newline, ':', '"' and '*').
const breakerChars = "\n:\"*"

// Breakers is the set of token ids that are DRY sequence breakers: ids whose decoded bytes contain
// '\n', ':', '"' or '*'. A repeat never spans a breaker. Computed once per vocabulary; read-only,
// so one Breakers serves any number of Samplers.
type Breakers struct {
	bits []uint64
	n    int
}

// NewBreakers classifies ids 0…vocab−1; text returns a token's decoded bytes.
func NewBreakers(vocab int, text func(id int) string) *Breakers {
	b := &Breakers{bits: make([]uint64, (vocab+63)/64)}
	for id := range vocab {
		if strings.ContainsAny(text(id), breakerChars) {
			b.bits[id>>6] |= 1 << (id & 63)
			b.n++
		}
	}
	return b
}

// Is reports whether id is a breaker. A nil Breakers has none; ids outside the vocabulary
// it was built for are not breakers.
func (b *Breakers) Is(id int32) bool {
	if b == nil || id < 0 || int(id>>6) >= len(b.bits) {
		return false
	}
	return b.bits[id>>6]&(1<<(id&63)) != 0
}

// Count is the number of breaker ids.
func (b *Breakers) Count() int {
	if b == nil {
		return 0
	}
	return b.n
}

// dryTable maps the token that followed each earlier occurrence of the current suffix to the
// longest repeat it would extend. len is dense over the vocabulary (0 = no entry) and ids lists
// the entries set, so that clearing costs the number of entries.
type dryTable struct {
	len []int32
	ids []int32
}

func (t *dryTable) put(id int32, n int32) {
	if t.len[id] == 0 {
		t.ids = append(t.ids, id)
	}
	t.len[id] = max(t.len[id], n)
}

func (t *dryTable) clear() {
	for _, id := range t.ids {
		t.len[id] = 0
	}
	t.ids = t.ids[:0]
}

// dryMatches fills t (cleared first) with the reference's dry_matches over the history window h
// (§4.2): nothing if len(h) < 2 or its last token is a breaker; otherwise every earlier position
// P holding the last token starts a match of length 1, extended backwards for k = 1…maxMatch−1
// while h[P−k] == h[L−1−k], all extension stopping at the first k whose suffix token h[L−1−k] is
// a breaker; h[P+1] maps to the longest such match. Cost O(L + occurrences·maxMatch).
func dryMatches(t *dryTable, h []int32, b *Breakers, maxMatch int) {
	t.clear()
	L := len(h)
	if L < 2 || b.Is(h[L-1]) {
		return
	}
	// kmax: how far the suffix reaches back before a breaker (or the window's start).
	kmax := 0
	for k := 1; k < maxMatch && k <= L-1 && !b.Is(h[L-1-k]); k++ {
		kmax = k
	}
	last := h[L-1]
	for p := 0; p < L-1; p++ {
		if h[p] != last {
			continue
		}
		n := int32(1)
		for k := 1; k <= kmax && p-k >= 0 && h[p-k] == h[L-1-k]; k++ {
			n++
		}
		t.put(h[p+1], n)
	}
}

// bitset is a set of token ids.
type bitset []uint64

func (s bitset) has(id int32) bool { return s[id>>6]&(1<<(id&63)) != 0 }

// add inserts id and reports whether it was new.
func (s bitset) add(id int32) bool {
	w, m := id>>6, uint64(1)<<(id&63)
	if s[w]&m != 0 {
		return false
	}
	s[w] |= m
	return true
}

func (s bitset) clear() { clear(s) }
