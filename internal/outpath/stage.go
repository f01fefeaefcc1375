package outpath

import (
	"fmt"
	"os"
	"path/filepath"
)

// PartialKind is the marker kind of an output directory being built
// (OUT.partial).
const PartialKind = "partial"

// Staged is an output directory built beside its destination as
// OUT.partial and published by one rename, so that OUT is at every
// instant absent, the old output or the complete new one. Use it as
//
//	s, err := outpath.Stage(out, version) // after Check and Disjoint
//	if err != nil { … }
//	defer s.Abort()
//	… write files into s.Dir …
//	return s.Publish("checkpoint")
type Staged struct {
	Out       string // the destination
	Dir       string // Out + ".partial", where the files are written
	version   string // forge's version, recorded in the marker
	published bool
}

// Stage starts building out: it removes a leftover out.partial of an
// interrupted run (only forge's own, and only when no live process is
// writing it: RemoveDir) and creates a fresh one marked as this process's
// (MakeDir). Checking out itself (Check, Disjoint) is the caller's part,
// done before any work.
func Stage(out, version string) (*Staged, error) {
	out = filepath.Clean(out)
	s := &Staged{Out: out, Dir: out + ".partial", version: version}
	if err := RemoveDir(s.Dir, PartialKind); err != nil {
		return nil, fmt.Errorf("the leftover of an interrupted run: %w", err)
	}
	if err := MakeDir(s.Dir, PartialKind, version); err != nil {
		return nil, err
	}
	return s, nil
}

// Publish records the files of Dir as forge's output of kind (Seal) and
// renames Dir to Out, replacing an existing output there (ReplaceDir).
func (s *Staged) Publish(kind string) error {
	if err := Seal(s.Dir, kind, s.version); err != nil {
		return err
	}
	if err := ReplaceDir(s.Dir, s.Out); err != nil {
		return err
	}
	s.published = true
	return nil
}

// Abort removes Dir and everything in it, unless Publish succeeded (then
// Dir may already be another run's). It is safe to call at any time.
func (s *Staged) Abort() {
	if !s.published {
		os.RemoveAll(s.Dir)
	}
}
