package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"forge/internal/durable"
)

// ReadSweep reads and checks a measurement file (Check).
func ReadSweep(path string) (*Sweep, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", path, err)
	}
	var s Sweep
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("sweep %s: %w: %w", path, ErrSweep, err)
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", path, err)
	}
	return &s, nil
}

// WriteSweep writes s as indented JSON, measurements in canonical order
// (Sort), through a synced temporary file renamed into place.
func WriteSweep(path string, s *Sweep) error {
	s.Sort()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'))
}

// Sort puts the measurements in work order: by unit as Units lists them,
// then by candidate as Candidates lists them.
func (s *Sweep) Sort() {
	slices.SortStableFunc(s.Measurements, func(a, b Measurement) int {
		return s.Item(a) - s.Item(b)
	})
}

// Item is a measurement's work index: unit index × candidates +
// candidate index (−1 when either is unknown).
func (s *Sweep) Item(m Measurement) int {
	u := slices.IndexFunc(s.Units, func(x Unit) bool { return x.Key == m.Unit })
	c := slices.Index(s.Candidates, m.Candidate)
	if u < 0 || c < 0 {
		return -1
	}
	return u*len(s.Candidates) + c
}

// Items is the number of work items: units × candidates.
func (s *Sweep) Items() int { return len(s.Units) * len(s.Candidates) }

// Check refuses a measurement file that contradicts itself: an unknown
// version, no units or candidates, a measurement of an unknown unit or
// candidate, measured twice, outside its shard, with bytes other than
// the unit's in that candidate, or a value that is not finite; and a
// whole file (no Shard) that misses a measurement.
func (s *Sweep) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrSweep, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Version != SweepVersion:
		return bad("version %d, want %d", s.Version, SweepVersion)
	case len(s.Units) == 0 || len(s.Candidates) == 0:
		return bad("no units or no candidates")
	case s.Model.Fingerprint == "" || s.Trace.SHA256 == "":
		return bad("the model's fingerprint or the trace's SHA-256 is missing")
	case s.Shard != nil && (s.Shard.N < 1 || s.Shard.I < 0 || s.Shard.I >= s.Shard.N):
		return bad("shard %s", s.Shard)
	}
	if _, err := ParseUnitKind(s.UnitKind); err != nil {
		return bad("%v", err)
	}
	for _, c := range s.Candidates {
		if p, err := ParseCandidate(c.String()); err != nil || p != c {
			return bad("candidate %q is not in canonical form", c)
		}
	}
	keys := map[string]bool{}
	for _, u := range s.Units {
		if keys[u.Key] || len(u.Names) == 0 || len(u.Names) != len(u.Shapes) || len(u.Names) != len(u.Matrices) {
			return bad("unit %q is repeated or malformed", u.Key)
		}
		keys[u.Key] = true
	}
	seen := map[int]bool{}
	for _, m := range s.Measurements {
		k := s.Item(m)
		switch {
		case k < 0:
			return bad("measurement of unknown unit %q or candidate %q", m.Unit, m.Candidate)
		case seen[k]:
			return bad("unit %s, %s measured twice", m.Unit, m.Candidate)
		case s.Shard != nil && !s.Shard.Owns(k):
			return bad("unit %s, %s is not in shard %s", m.Unit, m.Candidate, s.Shard)
		}
		seen[k] = true
		u := &s.Units[k/len(s.Candidates)]
		want, err := u.Bytes(m.Candidate)
		if err != nil {
			return bad("unit %s: %v", m.Unit, err)
		}
		if m.Bytes != want {
			return bad("unit %s, %s: %d bytes, its matrices store %d", m.Unit, m.Candidate, m.Bytes, want)
		}
		for _, v := range []float64{m.DKL, m.SE, m.P99, m.Top1} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("unit %s, %s: a value is not finite", m.Unit, m.Candidate)
			}
		}
	}
	if s.Shard == nil && len(seen) != s.Items() {
		return bad("%d of %d measurements: incomplete (a shard without its slice?)", len(seen), s.Items())
	}
	return nil
}

// Complete reports whether the file holds every measurement of its slice.
func (s *Sweep) Complete() bool {
	n := 0
	for k := range s.Items() {
		if s.Shard == nil || s.Shard.Owns(k) {
			n++
		}
	}
	return len(s.Measurements) == n
}

// Same returns an error unless s and o measure the same thing: the same
// model, trace rows, units, candidates, recipe and base.
func (s *Sweep) Same(o *Sweep) error {
	diff := func(what string, a, b any) error {
		return fmt.Errorf("%w: another %s (%v, not %v)", ErrSweep, what, b, a)
	}
	switch {
	case s.Model.Fingerprint != o.Model.Fingerprint:
		return diff("model", s.Model.Fingerprint, o.Model.Fingerprint)
	case s.Trace.SHA256 != o.Trace.SHA256 || s.Trace.Rows != o.Trace.Rows || s.Trace.Positions != o.Trace.Positions:
		return diff("trace or rows", s.Trace, o.Trace)
	case s.UnitKind != o.UnitKind:
		return diff("unit kind", s.UnitKind, o.UnitKind)
	case !slices.Equal(s.Candidates, o.Candidates):
		return diff("candidate list", s.Candidates, o.Candidates)
	case !bytes.Equal(compactJSON(s.Recipe), compactJSON(o.Recipe)):
		return diff("recipe", string(s.Recipe), string(o.Recipe))
	case s.Base != o.Base:
		return diff("base score", s.Base, o.Base)
	case s.FixedBytes != o.FixedBytes:
		return diff("fixed size", s.FixedBytes, o.FixedBytes)
	}
	a, _ := json.Marshal(s.Units)
	b, _ := json.Marshal(o.Units)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("%w: other units", ErrSweep)
	}
	return nil
}

func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// MergeSweeps joins shards into one whole file: every shard complete and
// consistent with the first (Same), all of one N, each index 0…N−1
// exactly once. Whole files (no Shard) may be merged too when they hold
// the same measurements (a re-run): they must agree exactly.
func MergeSweeps(parts []*Sweep) (*Sweep, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: nothing to merge", ErrSweep)
	}
	first := parts[0]
	n := 0
	if first.Shard != nil {
		n = first.Shard.N
	}
	have := map[int]bool{}
	out := *first
	out.Shard = nil
	out.Measurements = nil
	for i, p := range parts {
		if err := first.Same(p); err != nil {
			return nil, fmt.Errorf("part %d: %w", i+1, err)
		}
		switch {
		case (p.Shard == nil) != (n == 0) || (p.Shard != nil && p.Shard.N != n):
			return nil, fmt.Errorf("%w: part %d is shard %v of another split than part 1's %v", ErrSweep, i+1, p.Shard, first.Shard)
		case !p.Complete():
			return nil, fmt.Errorf("%w: part %d (shard %v) is incomplete: %d measurements", ErrSweep, i+1, p.Shard, len(p.Measurements))
		case p.Shard != nil && have[p.Shard.I]:
			return nil, fmt.Errorf("%w: shard %s is given twice", ErrSweep, p.Shard)
		}
		if p.Shard == nil {
			if i > 0 {
				a, _ := json.Marshal(p.Measurements)
				b, _ := json.Marshal(first.Measurements)
				if !bytes.Equal(a, b) {
					return nil, fmt.Errorf("%w: part %d measured other values than part 1", ErrSweep, i+1)
				}
			} else {
				out.Measurements = append(out.Measurements, p.Measurements...)
			}
			continue
		}
		have[p.Shard.I] = true
		out.Measurements = append(out.Measurements, p.Measurements...)
	}
	for i := range n {
		if !have[i] {
			return nil, fmt.Errorf("%w: shard %d/%d is missing", ErrSweep, i, n)
		}
	}
	out.Sort()
	if err := out.Check(); err != nil {
		return nil, err
	}
	return &out, nil
}
