package safetensors

import "golang.org/x/sys/unix"

// adviseHuge asks Linux to read the mapped file into 2 MiB folios where it
// faults pages in (MADV_HUGEPAGE), so that the mapping gets 2 MiB pages:
// fewer TLB misses for a decode step that streams every weight (see
// bufSize for the other half, a file written in whole 2 MiB pieces). It
// is advice: an error (no THP for files in this kernel) changes nothing.
func adviseHuge(data []byte) { _ = unix.Madvise(data, unix.MADV_HUGEPAGE) }

// dropPages drops the process's resident pages of data, a part of a
// shared read-only file mapping (MADV_DONTNEED): touching them again
// reads them back from the page cache. Advice: an error changes nothing.
func dropPages(data []byte) { _ = unix.Madvise(data, unix.MADV_DONTNEED) }
