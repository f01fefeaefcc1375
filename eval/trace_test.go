package eval_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/eval"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

func loadModel(t testing.TB, dir string) *model.Model {
	t.Helper()
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var tinyDir = filepath.Join("..", "models", "forge-tiny")

// randomRows returns seeded token rows of the given lengths.
func randomRows(vocab int, lens ...int) [][]int {
	r := rand.New(rand.NewPCG(7, 11))
	rows := make([][]int, len(lens))
	for i, n := range lens {
		for range n {
			rows[i] = append(rows[i], r.IntN(vocab))
		}
	}
	return rows
}

// sharpened multiplies a Linear's outputs by s: on the head it turns the
// reference into a candidate with a different temperature.
type sharpened struct {
	model.Linear
	s float32
}

func (l sharpened) Mul(dst, x *tensor.Matrix) {
	l.Linear.Mul(dst, x)
	for i := range dst.Data {
		dst.Data[i] *= l.s
	}
}

func record(t *testing.T, m *model.Model, rows [][]int, k int) (string, *eval.Meta) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.safetensors")
	meta, err := eval.Record(context.Background(), path, m, rows,
		eval.Meta{ForgeVersion: "test", Model: tinyDir, ModelKind: "checkpoint", Fingerprint: "fp", Seq: 33, Data: []byte(`{"rows":3}`)},
		eval.RecordOptions{TopK: k})
	if err != nil {
		t.Fatal(err)
	}
	return path, meta
}

func score(t *testing.T, m *model.Model, path string) *eval.Result {
	t.Helper()
	tr, err := eval.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := eval.Score(context.Background(), m, tr, eval.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSelfScore: the reference scored against its own trace has KL exactly
// 0 and full top-1 agreement at every position (full traces), its NLL
// equals the stored one up to float32 rounding, and the metadata survives
// the round trip.
func TestSelfScore(t *testing.T) {
	m := loadModel(t, tinyDir)
	rows := randomRows(m.Config().Vocab, 33, 20, 33)
	path, meta := record(t, m, rows, 0)
	if meta.Positions != 32+19+32 || meta.Rows != 3 || meta.Definition != "full" || meta.Vocab != 4160 {
		t.Errorf("meta %+v", meta)
	}
	tr, err := eval.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Fingerprint != "fp" || tr.Meta.Positions != meta.Positions || string(tr.Meta.Data) != `{"rows":3}` || tr.Meta.Seq != 33 {
		t.Errorf("read back %+v", tr.Meta)
	}
	tr.Close()
	res := score(t, m, path)
	for i := range res.KL {
		if res.KL[i] != 0 || !res.Same[i] {
			t.Fatalf("position %d: KL %g, same %v", i, res.KL[i], res.Same[i])
		}
		// The stored reference NLL is float32: relative rounding 6e-8.
		if d := math.Abs(res.NLL[i] - res.RefNLL[i]); d > 1e-6*max(1, res.NLL[i]) {
			t.Fatalf("position %d: NLL %g vs stored %g", i, res.NLL[i], res.RefNLL[i])
		}
	}
	if res.Tokens != 86 || len(res.KL) != meta.Positions {
		t.Errorf("%d tokens, %d positions", res.Tokens, len(res.KL))
	}
}

// TestTopKModes: against a sharpened candidate, a top-V trace gives the
// full trace's KL (within 1e-6; the sums differ only in order) and top-1,
// a top-16 trace gives a KL no larger (merging tokens into one bucket
// cannot increase a KL), and the self-score of a top-16 trace is exactly 0.
func TestTopKModes(t *testing.T) {
	m := loadModel(t, tinyDir)
	V := m.Config().Vocab
	rows := randomRows(V, 25, 25)
	full, _ := record(t, m, rows, 0)
	topV, _ := record(t, m, rows, V)
	top16, meta := record(t, m, rows, 16)
	if meta.Definition != "top-16+tail" {
		t.Errorf("definition %q", meta.Definition)
	}
	self := score(t, m, top16)
	for i, kl := range self.KL {
		if kl != 0 || !self.Same[i] {
			t.Fatalf("self top-16 position %d: KL %g", i, kl)
		}
	}
	head := m.Slot("lm_head.weight")
	*head = sharpened{*head, 1.3}
	rf, rv, r16 := score(t, m, full), score(t, m, topV), score(t, m, top16)
	var mean float64
	for i := range rf.KL {
		mean += rf.KL[i] / float64(len(rf.KL))
		if math.Abs(rf.KL[i]-rv.KL[i]) > 1e-6 || rf.Same[i] != rv.Same[i] || rf.NLL[i] != rv.NLL[i] {
			t.Errorf("position %d: full KL %g top-V %g, same %v %v", i, rf.KL[i], rv.KL[i], rf.Same[i], rv.Same[i])
		}
		// 1e-12: float64 rounding of sums of O(1) terms.
		if r16.KL[i] > rf.KL[i]+1e-12 || rf.KL[i] < 0 || r16.KL[i] < 0 {
			t.Errorf("position %d: top-16 KL %g, full %g", i, r16.KL[i], rf.KL[i])
		}
		if r16.Same[i] != rf.Same[i] {
			t.Errorf("position %d: top-1 differs between modes", i)
		}
	}
	if mean < 1e-3 {
		t.Errorf("mean KL %g: the sharpened candidate should differ", mean)
	}
}

// TestTraceRefused: a cut file, a trace missing a row, a corrupt value and
// a candidate with another vocabulary are refused with errors naming the
// file.
func TestTraceRefused(t *testing.T) {
	m := loadModel(t, tinyDir)
	rows := randomRows(m.Config().Vocab, 17, 17, 17)
	path, _ := record(t, m, rows, 0)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.safetensors")
	os.WriteFile(cut, raw[:len(raw)-1000], 0o644)
	if _, err := eval.OpenTrace(cut); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("truncated trace: %v", err)
	}

	missing := filepath.Join(dir, "missing.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []safetensors.Tensor
	for _, name := range f.Names() {
		if strings.HasSuffix(name, ".1") {
			continue
		}
		info, _ := f.Info(name)
		b, _ := f.Bytes(name)
		keep = append(keep, safetensors.Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	if err := safetensors.WriteFile(missing, keep, f.Metadata()); err != nil {
		t.Fatal(err)
	}
	_, err = eval.OpenTrace(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "row 1") || !errors.Is(err, eval.ErrTrace) {
		t.Errorf("trace missing a row: %v", err)
	}

	// A positive log-prob at row 2, position 3, with the row's checksum
	// made to match (the checksum alone is TestTraceChecksum's).
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	info, _ := f.Info("logp.2")
	f.Close()
	hdr := int(binary.LittleEndian.Uint64(raw))
	bad := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint32(bad[8+hdr+int(info.Begin)+4*(3*4160+5):], math.Float32bits(0.5))
	rewriteCRC(t, path, bad, 2)
	os.WriteFile(corrupt, bad, 0o644)
	tr, err := eval.OpenTrace(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eval.Score(context.Background(), m, tr, eval.ScoreOptions{})
	tr.Close()
	if err == nil || !strings.Contains(err.Error(), corrupt) || !strings.Contains(err.Error(), "row 2: position 3") {
		t.Errorf("corrupt log-prob: %v", err)
	}

	// A candidate, or a reference, whose logits are NaN.
	nan := loadModel(t, tinyDir)
	head := nan.Slot("lm_head.weight")
	*head = sharpened{*head, float32(math.NaN())}
	tr, err = eval.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eval.Score(context.Background(), nan, tr, eval.ScoreOptions{})
	tr.Close()
	if err == nil || !strings.Contains(err.Error(), "the candidate: the model's logits at position 0 are not finite") {
		t.Errorf("NaN candidate: %v", err)
	}
	for _, k := range []int{0, 4} {
		nanTrace := filepath.Join(dir, "nan.safetensors")
		_, err = eval.Record(context.Background(), nanTrace, nan, rows, eval.Meta{}, eval.RecordOptions{TopK: k})
		if err == nil || !strings.Contains(err.Error(), "the reference: the model's logits at position 0 are not finite") || !strings.Contains(err.Error(), nanTrace) {
			t.Errorf("NaN reference, top-%d: %v", k, err)
		}
	}

	other := loadModel(t, filepath.Join("..", "testdata", "qwen35-tiny-random"))
	tr, err = eval.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = eval.Score(context.Background(), other, tr, eval.ScoreOptions{})
	if !errors.Is(err, eval.ErrVocab) || !strings.Contains(err.Error(), path) {
		t.Errorf("vocabulary mismatch: %v", err)
	}
}

// TestRecordInterrupted: a cancelled context stops Record and leaves no
// file; bad options are refused before any work.
func TestRecordInterrupted(t *testing.T) {
	m := loadModel(t, tinyDir)
	path := filepath.Join(t.TempDir(), "t.safetensors")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := eval.Record(ctx, path, m, randomRows(4160, 9), eval.Meta{}, eval.RecordOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 0 {
		t.Errorf("left %d files", len(ents))
	}
	for _, c := range []struct {
		rows [][]int
		k    int
		want string
	}{
		{[][]int{{1}}, 0, "at least 2"},
		{[][]int{{1, 5000}}, 0, "outside the vocabulary"},
		{randomRows(4160, 4), 4161, "top-K"},
		{nil, 0, "no token rows"},
	} {
		_, err := eval.Record(context.Background(), path, m, c.rows, eval.Meta{}, eval.RecordOptions{TopK: c.k})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%v top-%d: %v", c.rows, c.k, err)
		}
	}
}
