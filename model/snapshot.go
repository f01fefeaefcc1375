package model

import (
	"fmt"
	"unsafe"
)

// Snapshot is a copy of a State at one position that no State owns: every
// DeltaNet layer's conv and recurrent state and every attention layer's KV
// rows up to that position, in the State's KV format. Restore puts it back
// into any State of the same Model and KV format, so one snapshot can seed
// several States (a prompt cache shared by server slots). Unlike a Mark it
// does not depend on the State it came from living on unchanged.
//
// A Snapshot is immutable once taken and safe to Restore from several
// goroutines at once.
type Snapshot struct {
	cfg    *Config
	kv     KV
	pos    int
	layers []layerState // deep copies; k, v and q hold pos rows
	bytes  int64
}

// Pos returns the number of tokens the snapshot's State had consumed.
func (sn *Snapshot) Pos() int { return sn.pos }

// Bytes returns the memory the snapshot holds.
func (sn *Snapshot) Bytes() int64 { return sn.bytes }

// Snapshot copies the State as it is now. A State whose last forward was
// cancelled midway cannot be copied (it is a programmer error: Reset or
// Rewind it first), and panics.
func (s *State) Snapshot() *Snapshot {
	if s.broken {
		panic("model: Snapshot of a State whose last forward was cancelled")
	}
	s.settled("Snapshot")
	sn := &Snapshot{cfg: s.cfg, kv: s.kv, pos: s.pos, layers: make([]layerState, len(s.layers))}
	for i := range s.layers {
		src, dst := &s.layers[i], &sn.layers[i]
		dst.conv = clone(src.conv)
		dst.rec = clone(src.rec)
		dst.k = clone(src.k)
		dst.v = clone(src.v)
		dst.q = kvInt8{k: clone(src.q.k), v: clone(src.q.v), vs: clone(src.q.vs)}
		sn.bytes += sliceBytes(dst.conv) + sliceBytes(dst.rec) + sliceBytes(dst.k) + sliceBytes(dst.v) +
			sliceBytes(dst.q.k) + sliceBytes(dst.q.v) + sliceBytes(dst.q.vs)
	}
	return sn
}

// Restore makes s exactly the State sn was taken from at that moment: the
// next forward gives the same logits, bit for bit. Every mark of s is
// released (as by Reset). A snapshot of another model's configuration or
// of another KV format is an error, and s is left unchanged.
func (s *State) Restore(sn *Snapshot) error {
	if sn.cfg != s.cfg {
		return fmt.Errorf("restore: the snapshot belongs to another model")
	}
	if sn.kv != s.kv {
		return fmt.Errorf("restore: the snapshot's KV cache is %v, the state's %v", sn.kv, s.kv)
	}
	s.Reset()
	for i := range s.layers {
		src, dst := &sn.layers[i], &s.layers[i]
		copy(dst.conv, src.conv)
		copy(dst.rec, src.rec)
		dst.k = append(dst.k[:0], src.k...)
		dst.v = append(dst.v[:0], src.v...)
		dst.q.k = append(dst.q.k[:0], src.q.k...)
		dst.q.v = append(dst.q.v[:0], src.q.v...)
		dst.q.vs = append(dst.q.vs[:0], src.q.vs...)
	}
	s.pos = sn.pos
	return nil
}

// clone copies s into a slice of exactly its length (nil for an empty s).
func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func sliceBytes[T any](s []T) int64 {
	var z T
	return int64(len(s)) * int64(unsafe.Sizeof(z))
}
