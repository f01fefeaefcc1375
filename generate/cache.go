package generate

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"

	"forge/model"
)

// Cache is a prompt cache that Engines of one Model share: State snapshots
// keyed by the exact token prefix they consumed, the least recently used
// evicted once their bytes pass the budget. Engines only store snapshots
// at cut points (Engine documentation), where a prefill that starts there
// computes exactly what one from the start of the prompt computes, so
// restoring one never changes a reply. It is safe for concurrent use.
type Cache struct {
	budget int64
	seed   maphash.Seed

	mu      sync.Mutex
	used    int64
	lru     *list.List                 // of *cacheEntry, most recent first
	entries map[cacheKey]*list.Element // by the hash of the prefix's ids and the lane
	stats   CacheStats
}

// cacheKey finds a snapshot: the hash of the prefix it consumed, and
// whose State it is (the target's, or a drafter's: speculative decoding
// keeps both at the same cut points).
type cacheKey struct {
	hash  uint64
	draft bool
}

// CacheStats count a Cache's traffic.
type CacheStats struct {
	Entries   int   // snapshots held
	Bytes     int64 // their memory
	Hits      int64 // lookups that found a snapshot
	Misses    int64 // lookups that found none
	Evictions int64 // snapshots dropped to stay within the budget
}

type cacheEntry struct {
	key    cacheKey
	prefix []int // the ids the snapshot consumed (a hash match is checked against them)
	snap   *model.Snapshot
}

// NewCache returns an empty Cache that holds at most budget bytes of
// snapshots (a snapshot larger than the budget is never kept).
func NewCache(budget int64) *Cache {
	return &Cache{budget: budget, seed: maphash.MakeSeed(), lru: list.New(), entries: map[cacheKey]*list.Element{}}
}

// Budget returns the cache's byte budget.
func (c *Cache) Budget() int64 { return c.budget }

// Stats returns the cache's counts now.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes = c.lru.Len(), c.used
	return s
}

// get returns the snapshot of exactly prefix (a drafter's when draft),
// or nil, and marks it used.
func (c *Cache) get(draft bool, prefix []int) *model.Snapshot {
	_, sn := c.longest(draft, prefix, []int{len(prefix)})
	return sn
}

// longest returns the longest of the cut lengths (ascending) whose prefix
// of ids has a snapshot (a drafter's when draft), and marks it used; (0,
// nil) when none has. The ids are hashed once, the hash read at each cut.
func (c *Cache) longest(draft bool, ids []int, cuts []int) (int, *model.Snapshot) {
	if len(cuts) == 0 {
		return 0, nil
	}
	hs := make([]uint64, len(cuts))
	var h maphash.Hash
	h.SetSeed(c.seed)
	at := 0
	for i, cut := range cuts {
		h.Write(idBytes(ids[at:cut]))
		hs[i], at = h.Sum64(), cut
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(cuts) - 1; i >= 0; i-- {
		if el, ok := c.entries[cacheKey{hs[i], draft}]; ok && slices.Equal(el.Value.(*cacheEntry).prefix, ids[:cuts[i]]) {
			c.lru.MoveToFront(el)
			return cuts[i], el.Value.(*cacheEntry).snap
		}
	}
	return 0, nil
}

// hash is the hash of ids, as longest computes it.
func (c *Cache) hash(ids []int) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.Write(idBytes(ids))
	return h.Sum64()
}

// count records a lookup's outcome.
func (c *Cache) count(hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit {
		c.stats.Hits++
	} else {
		c.stats.Misses++
	}
}

// has reports whether prefix has a snapshot (a drafter's when draft),
// marking it used.
func (c *Cache) has(draft bool, prefix []int) bool { return c.get(draft, prefix) != nil }

// put stores sn as the snapshot of prefix (whose length is sn.Pos(); a
// drafter's when draft) and evicts the least recently used snapshots
// beyond the budget.
func (c *Cache) put(draft bool, prefix []int, sn *model.Snapshot) {
	if sn.Pos() != len(prefix) {
		panic("generate: a snapshot stored under a prefix of another length")
	}
	if sn.Bytes() > c.budget {
		return
	}
	key := cacheKey{c.hash(prefix), draft}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		if slices.Equal(el.Value.(*cacheEntry).prefix, prefix) {
			c.lru.MoveToFront(el)
			return
		}
		c.remove(el) // another prefix with the same hash: the newer one stays
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, prefix: slices.Clone(prefix), snap: sn})
	c.used += sn.Bytes()
	for c.used > c.budget {
		c.remove(c.lru.Back())
		c.stats.Evictions++
	}
}

// remove drops an entry (c.mu held).
func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.used -= e.snap.Bytes()
}

// idBytes views ids as bytes (no copy).
func idBytes(ids []int) []byte {
	if len(ids) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&ids[0])), len(ids)*int(unsafe.Sizeof(ids[0])))
}
