package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"forge/lut"
	"forge/model"
)

// ErrSweep is wrapped by every malformed, inconsistent or foreign sweep
// measurement file.
var ErrSweep = errors.New("invalid sweep")

// SweepVersion is the layout of the measurement file Sweep writes.
const SweepVersion = 1

// Sweep is a measurement file (forge sweep): for each unit of the model's
// quantizable matrices and each candidate, the unit's exact stored bytes
// and the ΔKL of quantizing that unit alone, everything else at the
// reference's precision, on an in-domain trace (docs/quantization.md §4.4).
// A shard holds the measurements of its slice of the work (Shard); Merge
// joins complete sets of shards into one file.
type Sweep struct {
	Version      int         `json:"forge_sweep"`
	ForgeVersion string      `json:"forge_version"` // the build that measured it
	Model        SweepSource `json:"model"`         // the reference checkpoint
	Trace        SweepTrace  `json:"trace"`
	// UnitKind is how the matrices are grouped: "matrix", "part",
	// "layer" or "band:N" (N consecutive layers).
	UnitKind   string      `json:"unit_kind"`
	Candidates []Candidate `json:"candidates"`
	// Recipe is how every candidate was made: method, activation-weighted
	// codebooks, rotation, seed, calibration data (Recipe.Record).
	Recipe RawJSON `json:"recipe"`
	// Base is the reference's own KL against the trace on the same rows
	// (0 when the trace stores every log-prob of this reference exactly).
	Base  SweepBase `json:"base"`
	Units []Unit    `json:"units"`
	// FixedBytes is what the bundle stores outside the units at the
	// source's dtype: embeddings, norms, the small float matrices, and the
	// head when it is not a unit.
	FixedBytes int64 `json:"fixed_bytes"`
	// Shard is this file's slice of the work; nil for a whole sweep.
	Shard        *Shard        `json:"shard,omitempty"`
	Measurements []Measurement `json:"measurements"`
}

// SweepSource identifies the model a sweep measured.
type SweepSource struct {
	Path        string `json:"path"`
	Fingerprint string `json:"fingerprint"` // source.Fingerprint
}

// SweepTrace identifies the trace and the rows of it a sweep scored.
type SweepTrace struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"` // of the trace file
	Rows   int    `json:"rows"`   // its first Rows rows are scored
	// Positions is the number of positions scored (Σ over the rows of
	// tokens − 1).
	Positions int `json:"positions"`
}

// SweepBase is the reference's own score on the sweep's rows.
type SweepBase struct {
	KL   float64 `json:"kl"`
	Top1 float64 `json:"top1"`
}

// RawJSON is a JSON value kept as it was read.
type RawJSON []byte

// MarshalJSON returns r, or null when empty.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of b.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// Candidate is one choice for a unit: a format (a lut.ParseFormat
// spelling, canonical as lut.Format.String writes it; "bf16" keeps the
// unit at 16 bits) and the rank of a low-rank correction (0: none).
type Candidate struct {
	Format string `json:"format"`
	Rank   int    `json:"rank,omitempty"`
}

// String is the candidate as ParseCandidate reads it: the format name,
// then ", rank N" when it has a correction.
func (c Candidate) String() string {
	if c.Rank == 0 {
		return c.Format
	}
	return c.Format + ", rank " + strconv.Itoa(c.Rank)
}

// Spec is the candidate as a plan entry.
func (c Candidate) Spec() (Spec, error) {
	f, err := lut.ParseFormat(c.Format)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Format: f, Rank: c.Rank}, nil
}

// ParseCandidate reads "FORMAT" or "FORMAT, rank N" (N ≥ 1; only a
// quantized format takes a correction).
func ParseCandidate(s string) (Candidate, error) {
	name, rank := strings.TrimSpace(s), 0
	if f, r, ok := strings.Cut(name, ","); ok {
		num, ok := strings.CutPrefix(strings.TrimSpace(r), "rank ")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || err != nil || n < 1 {
			return Candidate{}, fmt.Errorf("candidate %q: want FORMAT or \"FORMAT, rank N\" with N ≥ 1", s)
		}
		name, rank = strings.TrimSpace(f), n
	}
	f, err := lut.ParseFormat(name)
	if err != nil {
		return Candidate{}, fmt.Errorf("candidate %q: %w", s, err)
	}
	if rank > 0 && !f.Quantized() {
		return Candidate{}, fmt.Errorf("candidate %q: a low-rank correction needs a quantized format, not %s", s, f)
	}
	return Candidate{Format: f.String(), Rank: rank}, nil
}

// ParseCandidates reads a list of candidates separated by ";", refusing
// an empty list and repeats.
func ParseCandidates(s string) ([]Candidate, error) {
	var cs []Candidate
	seen := map[Candidate]bool{}
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		c, err := ParseCandidate(part)
		if err != nil {
			return nil, err
		}
		if seen[c] {
			return nil, fmt.Errorf("candidates: %s is listed twice", c)
		}
		seen[c] = true
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("candidates %q: none given", s)
	}
	return cs, nil
}

// Unit is a set of quantizable matrices measured, and later planned, as
// one: a matrix, a part of a layer, a layer or a band of layers.
type Unit struct {
	Key      string   `json:"key"`      // "3.gate", "3.mlp", "3", "0-7" or "head"
	Layer    int      `json:"layer"`    // its first layer (the number of layers for the head)
	Matrices []string `json:"matrices"` // plan keys of its matrices ("3.gate", …, "head")
	Names    []string `json:"names"`    // their checkpoint tensor names, in checkpoint order
	Shapes   [][2]int `json:"shapes"`   // their [out, in]
	Params   int64    `json:"params"`
}

// Measurement is one unit in one candidate.
type Measurement struct {
	Unit      string    `json:"unit"`
	Candidate Candidate `json:"candidate"`
	// Bytes is what the unit's matrices store in the candidate: indices,
	// codebooks, scales and correction factors (lut.Format.Size).
	Bytes int64 `json:"bytes"`
	// DKL is the mean KL of the model with this unit alone quantized,
	// less Base.KL, in nats per position; SE its standard error over the
	// rows (the difference is taken row by row).
	DKL float64 `json:"dkl"`
	SE  float64 `json:"se"`
	// P99 is the 99th percentile of the per-position KL, Top1 the share
	// of positions whose argmax agrees with the reference's.
	P99  float64 `json:"p99"`
	Top1 float64 `json:"top1"`
}

// Shard is slice I (0-based) of N of a sweep's work.
type Shard struct {
	I int `json:"i"`
	N int `json:"n"`
}

// String writes the shard as ParseShard reads it: "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard reads "I/N" with 0 ≤ I < N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 ≤ I < N", s)
	}
	return Shard{I: i, N: n}, nil
}

// Owns reports whether the work item with index k (the unit's index times
// the number of candidates plus the candidate's index) belongs to the
// shard: items are dealt round-robin, so shards get equal shares of every
// layer's work.
func (s Shard) Owns(k int) bool { return s.N <= 1 || k%s.N == s.I }

// ParseUnitKind reads a unit kind: matrix, part, layer or band:N (N ≥ 1).
func ParseUnitKind(s string) (string, error) {
	switch s {
	case "matrix", "part", "layer":
		return s, nil
	}
	if num, ok := strings.CutPrefix(s, "band:"); ok {
		if n, err := strconv.Atoi(num); err == nil && n >= 1 && strconv.Itoa(n) == num {
			return s, nil
		}
	}
	return "", fmt.Errorf("unit %q: want matrix, part, layer or band:N with N ≥ 1", s)
}

// Units groups the quantizable matrices of the decoder layers of c (and
// the head, with head set) into units of kind (ParseUnitKind), in
// checkpoint order. Parts are mlp (gate/up/down), mixer (a DeltaNet's
// qkv/z/out), attn (attention q/o) and kv (attention k/v).
func Units(c *model.Config, kind string, head bool) ([]Unit, error) {
	if _, err := ParseUnitKind(kind); err != nil {
		return nil, err
	}
	band := 0
	if num, ok := strings.CutPrefix(kind, "band:"); ok {
		band, _ = strconv.Atoi(num)
	}
	var units []Unit
	at := map[string]int{}
	for _, t := range model.Tensors(c) {
		if !t.Quantizable || (t.Layer < 0 && !head) {
			continue
		}
		var k string
		layer := t.Layer
		switch {
		case t.Layer < 0:
			k, layer = "head", len(c.Layers)
		case kind == "matrix":
			k = key(t.Layer, t.Role)
		case kind == "part":
			p := string(t.Part)
			if t.Part == model.PartGDN {
				p = "mixer"
			}
			k = key(t.Layer, p)
		case kind == "layer":
			k = strconv.Itoa(t.Layer)
		default:
			lo := t.Layer / band * band
			layer = lo
			k = fmt.Sprintf("%d-%d", lo, min(lo+band, len(c.Layers))-1)
		}
		i, ok := at[k]
		if !ok {
			i = len(units)
			at[k] = i
			units = append(units, Unit{Key: k, Layer: layer})
		}
		u := &units[i]
		u.Matrices = append(u.Matrices, key(t.Layer, t.Role))
		u.Names = append(u.Names, t.Name)
		u.Shapes = append(u.Shapes, [2]int{t.Shape[0], t.Shape[1]})
		u.Params += int64(t.Shape[0]) * int64(t.Shape[1])
	}
	return units, nil
}

// Bytes is what u stores in candidate c (lut.Format.Size of each matrix);
// an error if the format cannot hold one of its shapes.
func (u *Unit) Bytes(c Candidate) (int64, error) {
	f, err := lut.ParseFormat(c.Format)
	if err != nil {
		return 0, err
	}
	var n int64
	for i, sh := range u.Shapes {
		if err := f.CheckShape(sh[0], sh[1]); err != nil {
			return 0, fmt.Errorf("%s: %w", u.Names[i], err)
		}
		if c.Rank > min(sh[0], sh[1]) {
			return 0, fmt.Errorf("%s %v: a low-rank correction of rank %d exceeds its smaller side", u.Names[i], sh, c.Rank)
		}
		n += f.Size(sh[0], sh[1], c.Rank).Total()
	}
	return n, nil
}
