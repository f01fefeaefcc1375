package safetensors

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestEvict: after Evict a mapped tensor still reads its bytes; Evict of
// bytes that are not a view of the mapping (a copy on the heap, a file
// opened with OpenBytes) leaves them as they were; and on Linux the
// tensor's whole pages leave the process's resident set (the mapping's
// Rss in /proc/self/smaps falls by at least their size).
func TestEvict(t *testing.T) {
	const n = 4 << 20
	data := randomBytes(rand.New(rand.NewPCG(7, 8)), n)
	path := filepath.Join(t.TempDir(), "e.safetensors")
	if err := WriteFile(path, []Tensor{{Name: "w", DType: U8, Shape: []int{n}, Data: data}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := f.Bytes("w")
	if !bytes.Equal(b, data) { // also faults every page in
		t.Fatal("the mapped tensor differs from what was written")
	}
	before := mappingRSS(t, b)
	f.Evict(b)
	after := mappingRSS(t, b)
	if !bytes.Equal(b, data) {
		t.Fatal("the tensor reads other bytes after Evict")
	}
	if runtime.GOOS == "linux" {
		whole := int64(n-2*os.Getpagesize()) / 1024
		if before-after < whole {
			t.Errorf("resident KB of the mapping %d before Evict, %d after: want a fall of at least %d", before, after, whole)
		}
		t.Logf("mapping resident: %d KB before, %d KB after", before, after)
	}

	heap := slices.Clone(data)
	f.Evict(heap)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := OpenBytes("mem", raw)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := g.Bytes("w")
	g.Evict(gb)
	if !bytes.Equal(heap, data) || !bytes.Equal(gb, data) {
		t.Fatal("Evict changed bytes outside a mapping")
	}
}

// mappingRSS returns the resident KB of the mapping that holds b, from
// /proc/self/smaps (-1 where there is none to read).
func mappingRSS(t *testing.T, b []byte) int64 {
	t.Helper()
	fd, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer fd.Close()
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	in := false
	sc := bufio.NewScanner(fd)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line, "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "Rss:"), "%d", &kb); err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no mapping in /proc/self/smaps holds the tensor")
	return -1
}
