package generate

import (
	"container/list"
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

	mu      sync.Mutex
	used    int64
	lru     *list.List // of *cacheEntry, most recent first
	entries map[string]*list.Element
	stats   CacheStats
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
	key  string // the prefix's ids as bytes (prefixKey)
	snap *model.Snapshot
}

// NewCache returns an empty Cache that holds at most budget bytes of
// snapshots (a snapshot larger than the budget is never kept).
func NewCache(budget int64) *Cache {
	return &Cache{budget: budget, lru: list.New(), entries: map[string]*list.Element{}}
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

// get returns the snapshot of exactly prefix, or nil, and marks it used.
func (c *Cache) get(prefix []int) *model.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[prefixKey(prefix)]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry).snap
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

// has reports whether prefix has a snapshot, marking it used.
func (c *Cache) has(prefix []int) bool { return c.get(prefix) != nil }

// put stores sn as the snapshot of prefix (whose length is sn.Pos()) and
// evicts the least recently used snapshots beyond the budget.
func (c *Cache) put(prefix []int, sn *model.Snapshot) {
	if sn.Pos() != len(prefix) {
		panic("generate: a snapshot stored under a prefix of another length")
	}
	if sn.Bytes() > c.budget {
		return
	}
	key := prefixKey(prefix)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, snap: sn})
	c.used += sn.Bytes()
	for c.used > c.budget {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.used -= e.snap.Bytes()
		c.stats.Evictions++
	}
}

// prefixKey is the ids' bytes: equal keys are equal prefixes.
func prefixKey(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&ids[0])), len(ids)*int(unsafe.Sizeof(ids[0]))))
}
