package source

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/model"
)

// The fixtures: a random-init checkpoint (8 layers, vocab 512) and a
// bundle quantized from it (LUT2 per-tensor + pcs, Hadamard, low rank 4;
// bundle/testdata/README.md), and forge-tiny, a different model.
var (
	refDir   = filepath.Join("..", "testdata", "qwen35-tiny-random")
	candDir  = filepath.Join("..", "bundle", "testdata", "v1-tiny")
	otherDir = filepath.Join("..", "models", "forge-tiny")
)

func TestParseAblation(t *testing.T) {
	a, err := ParseAblation("mlp, kv", "2-5")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"layers.2.mlp.gate_proj.weight":           true,
		"layers.5.mlp.down_proj.weight":           true,
		"layers.6.mlp.down_proj.weight":           false,
		"layers.1.mlp.up_proj.weight":             false,
		"layers.3.self_attn.k_proj.weight":        true,
		"layers.3.self_attn.q_proj.weight":        false, // attn, not kv
		"layers.2.linear_attn.in_proj_qkv.weight": false,
		"lm_head.weight":                          false,
		"embed_tokens.weight":                     false,
	} {
		if got := a.Selects(name); got != want {
			t.Errorf("%s: selected %v, want %v", name, got, want)
		}
	}
	all, _ := ParseAblation("", "")
	if !all.Selects("lm_head.weight") || !all.Selects("layers.7.mlp.up_proj.weight") {
		t.Error("empty --parts/--layers does not select everything")
	}
	for _, c := range [][2]string{{"ffn", ""}, {"", "5-3"}, {"", "a-b"}, {"", "-1"}, {"", "3-"}} {
		if _, err := ParseAblation(c[0], c[1]); err == nil {
			t.Errorf("ParseAblation(%q, %q) accepted", c[0], c[1])
		}
	}
}

// TestAblationSource: selecting every part of every layer gives the
// bundle's logits bit for bit, selecting nothing the reference's, and a
// partial selection something in between (different from both).
func TestAblationSource(t *testing.T) {
	toks := []int{1, 17, 200, 45, 300, 511, 0, 99}
	logits := func(src model.Source) []float32 {
		m, err := model.Load(src)
		if err != nil {
			t.Fatal(err)
		}
		l := m.Forward(m.NewState(), toks)
		return slices.Clone(l.Data[:l.Rows*l.Cols])
	}
	open := func(parts, layers string) []float32 {
		sel, err := ParseAblation(parts, layers)
		if err != nil {
			t.Fatal(err)
		}
		a, err := OpenAblation(refDir, candDir, sel)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		return logits(a)
	}
	rs, err := Open(refDir)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	bs, err := Open(candDir)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	wantRef, wantQ := logits(rs), logits(bs)
	if !slices.Equal(open("", ""), wantQ) {
		t.Error("all parts, all layers: not the bundle's logits")
	}
	if !slices.Equal(open("mlp", "0-0"), open("mlp", "0")) {
		t.Error("--layers 0-0 and 0 differ")
	}
	part := open("mlp", "0-3")
	if slices.Equal(part, wantRef) || slices.Equal(part, wantQ) {
		t.Error("MLP of layers 0-3 gives the reference's or the bundle's logits")
	}
	sel, _ := ParseAblation("mlp", "0-8")
	if _, err := OpenAblation(refDir, candDir, sel); err == nil || !strings.Contains(err.Error(), "0-7") {
		t.Errorf("--layers past the model: %v", err)
	}
	sel, _ = ParseAblation("", "")
	if _, err := OpenAblation(refDir, otherDir, sel); err == nil || !strings.Contains(err.Error(), "different models") {
		t.Errorf("a different model as candidate: %v", err)
	}
}

// TestNewAblation: the Ablated takes the sources it is given, reports the
// candidate and the selection, and refuses two different models while
// leaving them to the caller (still open: their tensors still read).
func TestNewAblation(t *testing.T) {
	ref, err := Open(refDir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(otherDir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sel, _ := ParseAblation("mlp", "")
	if _, err := NewAblation(ref, other, sel); err == nil || !strings.Contains(err.Error(), "different models") {
		t.Fatalf("different models: %v", err)
	}
	if _, err := other.Vector("norm.weight"); err != nil {
		t.Errorf("the candidate was closed by a refused NewAblation: %v", err)
	}
	cand, err := Open(candDir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAblation(ref, cand, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Candidate() != cand || !slices.Equal(a.Selection().Parts, sel.Parts) {
		t.Errorf("Candidate %v, Selection %v", a.Candidate(), a.Selection())
	}
}
