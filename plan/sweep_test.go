package plan

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/model"
)

// tinyConfig is forge-tiny's configuration: 8 layers, attention at 3 and 7.
func tinyConfig(t *testing.T) model.Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "models", "forge-tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUnits(t *testing.T) {
	c := tinyConfig(t)
	all := func(us []Unit) (names []string, params int64) {
		for _, u := range us {
			names = append(names, u.Names...)
			params += u.Params
		}
		return names, params
	}
	matrices, err := Units(&c, "matrix", false)
	if err != nil {
		t.Fatal(err)
	}
	wantNames, wantParams := all(matrices)
	// six DeltaNet layers of qkv, z, out + gate, up, down; two attention
	// layers of q, k, v, o + the MLP.
	cases := []struct {
		kind string
		n    int
		keys []string
	}{
		{"matrix", 6*6 + 2*7, []string{"0.qkv", "0.z", "0.out", "0.gate", "3.k", "7.down"}},
		{"part", 6*2 + 2*3, []string{"0.mixer", "0.mlp", "3.attn", "3.kv", "3.mlp"}},
		{"layer", 8, []string{"0", "7"}},
		{"band:3", 3, []string{"0-2", "3-5", "6-7"}},
		{"band:8", 1, []string{"0-7"}},
	}
	for _, cs := range cases {
		us, err := Units(&c, cs.kind, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != cs.n {
			t.Errorf("%s: %d units, want %d", cs.kind, len(us), cs.n)
		}
		for _, k := range cs.keys {
			if !slices.ContainsFunc(us, func(u Unit) bool { return u.Key == k }) {
				t.Errorf("%s: no unit %q", cs.kind, k)
			}
		}
		// Every kind partitions the same matrices.
		names, params := all(us)
		slices.Sort(names)
		if want := slices.Sorted(slices.Values(wantNames)); !slices.Equal(names, want) || params != wantParams {
			t.Errorf("%s: units hold other matrices than the matrix units (%d vs %d, %d vs %d params)",
				cs.kind, len(names), len(wantNames), params, wantParams)
		}
	}
	us, _ := Units(&c, "part", false)
	for _, u := range us {
		if u.Key == "3.kv" && !slices.Equal(u.Matrices, []string{"3.k", "3.v"}) {
			t.Errorf("3.kv holds %v", u.Matrices)
		}
		if u.Key == "5.mlp" && u.Layer != 5 {
			t.Errorf("5.mlp: layer %d", u.Layer)
		}
	}
	withHead, _ := Units(&c, "layer", true)
	if h := withHead[len(withHead)-1]; h.Key != "head" || h.Layer != 8 || h.Names[0] != "lm_head.weight" {
		t.Errorf("head unit %+v", h)
	}
	for _, bad := range []string{"", "band:0", "band:x", "rows", "band:-1"} {
		if _, err := Units(&c, bad, false); err == nil {
			t.Errorf("unit kind %q accepted", bad)
		}
	}
}

func TestParseCandidate(t *testing.T) {
	good := map[string]Candidate{
		"lut4 + pcs":                     {Format: "LUT4 per-tensor + pcs"},
		"vector 2x16+pcs":                {Format: "vector 2x16 + pcs"},
		"LUT4 per-tensor + pcs, rank 64": {Format: "LUT4 per-tensor + pcs", Rank: 64},
		" bf16 ":                         {Format: "bf16"},
	}
	for s, want := range good {
		c, err := ParseCandidate(s)
		if err != nil || c != want {
			t.Errorf("%q: %+v, %v; want %+v", s, c, err, want)
		}
		if back, err := ParseCandidate(c.String()); err != nil || back != c {
			t.Errorf("%q does not read back: %+v %v", c, back, err)
		}
	}
	for _, s := range []string{"", "LUT5", "bf16, rank 8", "LUT4 + pcs, rank 0", "LUT4 + pcs, rank x", "LUT4 + pcs, 64", "lut4"} {
		if _, err := ParseCandidate(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if _, err := ParseCandidates("lut4 + pcs;LUT4 per-tensor + pcs"); err == nil {
		t.Error("a repeated candidate was accepted")
	}
	if cs, err := ParseCandidates("lut4+pcs; vector 2x16 + pcs;bf16"); err != nil || len(cs) != 3 {
		t.Errorf("ParseCandidates: %v %v", cs, err)
	}
}

// fakeSweep is a whole sweep of forge-tiny's parts in three candidates
// with made-up values.
func fakeSweep(t *testing.T) *Sweep {
	t.Helper()
	c := tinyConfig(t)
	us, err := Units(&c, "part", false)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := ParseCandidates("vector 2x16 + pcs;LUT4 + pcs;bf16")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sweep{Version: SweepVersion, Model: SweepSource{Path: "/m", Fingerprint: "abc"},
		Trace: SweepTrace{Path: "/t", SHA256: "def", Rows: 4, Positions: 400}, UnitKind: "part",
		Candidates: cands, Recipe: RawJSON(`{"method":"rtn"}`), Units: us, FixedBytes: 1000}
	for k := range s.Items() {
		u, cd := &us[k/len(cands)], cands[k%len(cands)]
		b, err := u.Bytes(cd)
		if err != nil {
			t.Fatal(err)
		}
		s.Measurements = append(s.Measurements, Measurement{Unit: u.Key, Candidate: cd, Bytes: b,
			DKL: 0.01 * float64(k%len(cands)), SE: 0.001, P99: 0.1, Top1: 0.9})
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	return s
}

// shardOf is the slice of s that shard i/n measures.
func shardOf(s *Sweep, i, n int) *Sweep {
	p := *s
	p.Shard = &Shard{I: i, N: n}
	p.Measurements = nil
	for _, m := range s.Measurements {
		if p.Shard.Owns(s.Item(m)) {
			p.Measurements = append(p.Measurements, m)
		}
	}
	return &p
}

func TestMergeSweeps(t *testing.T) {
	whole := fakeSweep(t)
	want, _ := json.Marshal(whole)
	shards := []*Sweep{shardOf(whole, 2, 3), shardOf(whole, 0, 3), shardOf(whole, 1, 3)}
	for _, p := range shards {
		if err := p.Check(); err != nil || !p.Complete() {
			t.Fatalf("shard %s: %v (complete %v)", p.Shard, err, p.Complete())
		}
	}
	got, err := MergeSweeps(shards)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != string(want) {
		t.Errorf("merged shards differ from the whole sweep")
	}

	other := shardOf(whole, 1, 3)
	other.Model.Fingerprint = "zzz"
	partial := shardOf(whole, 1, 3)
	partial.Measurements = partial.Measurements[1:]
	otherSplit := shardOf(whole, 1, 2)
	bad := []struct {
		name  string
		parts []*Sweep
		want  string
	}{
		{"missing shard", shards[:2], "missing"},
		{"shard twice", []*Sweep{shards[0], shards[1], shards[2], shardOf(whole, 0, 3)}, "twice"},
		{"other model", []*Sweep{shards[0], shards[1], other}, "another model"},
		{"incomplete", []*Sweep{shards[0], shards[1], partial}, "incomplete"},
		{"another split", []*Sweep{shards[0], shards[1], otherSplit}, "another split"},
		{"nothing", nil, "nothing"},
	}
	for _, b := range bad {
		_, err := MergeSweeps(b.parts)
		if !errors.Is(err, ErrSweep) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want an ErrSweep saying %q", b.name, err, b.want)
		}
	}
}

func TestSweepCheck(t *testing.T) {
	edits := map[string]func(s *Sweep){
		"wrong bytes":     func(s *Sweep) { s.Measurements[3].Bytes++ },
		"not finite":      func(s *Sweep) { s.Measurements[0].DKL = math.NaN() },
		"unknown unit":    func(s *Sweep) { s.Measurements[0].Unit = "9.mlp" },
		"twice":           func(s *Sweep) { s.Measurements[1] = s.Measurements[0] },
		"incomplete":      func(s *Sweep) { s.Measurements = s.Measurements[1:] },
		"version":         func(s *Sweep) { s.Version = 2 },
		"no fingerprint":  func(s *Sweep) { s.Model.Fingerprint = "" },
		"outside shard":   func(s *Sweep) { s.Shard = &Shard{I: 0, N: 2} },
		"odd candidate":   func(s *Sweep) { s.Candidates[0].Format = "lut4" },
		"repeated unit":   func(s *Sweep) { s.Units[1].Key = s.Units[0].Key },
		"bad kind":        func(s *Sweep) { s.UnitKind = "row" },
		"bad shard index": func(s *Sweep) { s.Shard = &Shard{I: 2, N: 2} },
	}
	for name, edit := range edits {
		s := fakeSweep(t)
		edit(s)
		if err := s.Check(); !errors.Is(err, ErrSweep) {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
}

func TestSweepFile(t *testing.T) {
	s := fakeSweep(t)
	slices.Reverse(s.Measurements)
	p := filepath.Join(t.TempDir(), "s.json")
	if err := WriteSweep(p, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSweep(p)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(fakeSweep(t)) // written in work order
	if string(a) != string(b) {
		t.Error("the file does not read back as written, in work order")
	}
	raw, _ := os.ReadFile(p)
	for name, edit := range map[string]func(string) string{
		"truncated":     func(s string) string { return s[:len(s)/2] },
		"unknown field": func(s string) string { return strings.Replace(s, `"forge_sweep"`, `"extra": 1, "forge_sweep"`, 1) },
		"not json":      func(string) string { return "hello" },
	} {
		q := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(q, []byte(edit(string(raw))), 0o644)
		if _, err := ReadSweep(q); err == nil || !strings.Contains(err.Error(), q) {
			t.Errorf("%s: ReadSweep = %v, want an error naming the file", name, err)
		}
	}
}

func TestShard(t *testing.T) {
	for _, bad := range []string{"", "1", "2/2", "-1/3", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
	s, err := ParseShard("1/3")
	if err != nil || s.String() != "1/3" {
		t.Fatalf("1/3: %v %v", s, err)
	}
	// Every item belongs to exactly one shard.
	for k := range 20 {
		n := 0
		for i := range 3 {
			if (Shard{I: i, N: 3}).Owns(k) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("item %d is in %d shards", k, n)
		}
	}
}
