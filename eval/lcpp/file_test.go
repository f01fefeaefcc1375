package lcpp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sampleBase makes a small seeded base: n_ctx 8 (3 scored rows), an odd
// vocabulary of 7 (llama.cpp pads its rows to an even count), 3 windows.
func sampleBase(rng *rand.Rand, bos int) (Header, []BaseWindow) {
	h := Header{NCtx: 8, NVocab: 7, NChunk: 3, BOS: bos, Meta: map[string]string{"model": "m"}}
	for range h.NChunk * h.NCtx {
		h.Tokens = append(h.Tokens, rng.IntN(h.NVocab))
	}
	wins := make([]BaseWindow, h.NChunk)
	z := make([]float32, h.NVocab)
	for i := range wins {
		wins[i].Resize(h.Scored(), h.NVocab)
		for j := range h.Scored() {
			for k := range z {
				z[k] = float32(6 * rng.NormFloat64())
			}
			wins[i].Compress(j, z)
		}
	}
	return h, wins
}

func writeBase(t *testing.T, path string, h Header, wins []BaseWindow, f Format) {
	t.Helper()
	w, err := Create(path, h, f)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range wins {
		if err := w.WriteWindow(&wins[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBaseRoundTrip writes a base in both layouts and reads it back.
func TestBaseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	h, wins := sampleBase(rng, 5)
	dir := t.TempDir()
	for _, f := range []Format{Forge, LlamaCpp} {
		t.Run(f.String(), func(t *testing.T) {
			path := filepath.Join(dir, "base."+f.String())
			writeBase(t, path, h, wins, f)
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			wantBOS := h.BOS
			if f == LlamaCpp {
				wantBOS = BOSUnknown // llama.cpp's header does not record it
			}
			if b.Format != f || b.NCtx != 8 || b.NVocab != 7 || b.NChunk != 3 || b.BOS != wantBOS || !slices.Equal(b.Tokens, h.Tokens) {
				t.Fatalf("header %v %d %d %d BOS %d tokens %v", b.Format, b.NCtx, b.NVocab, b.NChunk, b.BOS, b.Tokens)
			}
			if f == Forge && (b.Meta["model"] != "m" || b.Meta["format"] != formatName) {
				t.Errorf("metadata %v", b.Meta)
			}
			var got BaseWindow
			for i := range wins {
				if err := b.ReadWindow(i, &got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Codes, wins[i].Codes) || !slices.Equal(got.Scale, wins[i].Scale) ||
					!slices.Equal(got.MinLogProb, wins[i].MinLogProb) {
					t.Errorf("window %d differs after the round trip", i)
				}
			}
		})
	}
	// llama.cpp's layout byte for byte: header, tokens, then rows of
	// nv = 2·⌈7/2⌉ + 4 = 12 uint16 slots (scale, min_log_prob, 7 codes, 1 pad).
	data, err := os.ReadFile(filepath.Join(dir, "base.llama.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 20 + 4*3*8 + 3*3*12*2; len(data) != want {
		t.Fatalf("llama.cpp file is %d bytes, want %d", len(data), want)
	}
	le := binary.LittleEndian
	if string(data[:8]) != "_logits_" || le.Uint32(data[8:]) != 8 || le.Uint32(data[12:]) != 7 || le.Uint32(data[16:]) != 3 ||
		int(le.Uint32(data[20:])) != h.Tokens[0] {
		t.Errorf("header bytes % x", data[:24])
	}
	row := data[20+4*24+12*2:] // window 0, row 1
	codes, scale, mlp := wins[0].Row(1)
	if math.Float32frombits(le.Uint32(row)) != scale || math.Float32frombits(le.Uint32(row[4:])) != mlp ||
		le.Uint16(row[8:]) != codes[0] || le.Uint16(row[8+2*6:]) != codes[6] || le.Uint16(row[8+2*7:]) != 0 {
		t.Errorf("row bytes % x", row[:24])
	}
}

// TestBaseRefusals: truncated, padded, foreign and unfinished files.
func TestBaseRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	h, wins := sampleBase(rng, -1)
	dir := t.TempDir()
	for _, f := range []Format{Forge, LlamaCpp} {
		path := filepath.Join(dir, "base."+f.String())
		writeBase(t, path, h, wins, f)
		data, _ := os.ReadFile(path)
		for _, c := range []struct {
			name string
			data []byte
		}{
			{"truncated by one byte", data[:len(data)-1]},
			{"truncated to half", data[:len(data)/2]},
			{"header only", data[:12]},
			{"one byte added", append(slices.Clone(data), 0)},
			{"empty", nil},
		} {
			if f == Forge && c.name == "one byte added" {
				continue // safetensors allows bytes after the last tensor
			}
			bad := filepath.Join(dir, "bad")
			os.WriteFile(bad, c.data, 0o644)
			b, err := Open(bad)
			if err == nil {
				b.Close()
				t.Errorf("%s, %s: opened", f, c.name)
			} else if !errors.Is(err, ErrBase) {
				t.Errorf("%s, %s: %v does not wrap ErrBase", f, c.name, err)
			}
		}
		// An unfinished writer leaves nothing at its path.
		unfinished := filepath.Join(dir, "unfinished."+f.String())
		w, err := Create(unfinished, h, f)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteWindow(&wins[0])
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "1 of 3 windows") {
			t.Errorf("%s: Close after 1 of 3 windows: %v", f, err)
		}
		if _, err := os.Stat(unfinished); !os.IsNotExist(err) {
			t.Errorf("%s: unfinished base exists: %v", f, err)
		}
	}
	// A safetensors file that is not a base, and a bad header.
	other := filepath.Join(dir, "other.safetensors")
	os.WriteFile(other, []byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"), 0o644)
	if _, err := Open(other); !errors.Is(err, ErrBase) || !strings.Contains(err.Error(), "not a llama.cpp KL base") {
		t.Errorf("foreign safetensors: %v", err)
	}
	bad := h
	bad.Tokens = append(slices.Clone(h.Tokens[:len(h.Tokens)-1]), 7) // outside the vocabulary of 7
	if _, err := Create(filepath.Join(dir, "x"), bad, Forge); !errors.Is(err, ErrBase) {
		t.Errorf("token outside the vocabulary: %v", err)
	}
}

// TestReportPrint: the printed report has llama.cpp's lines in its
// order, and the JSON keeps every statistic (NaN as null).
func TestReportPrint(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var st Stats
	for i := range 120 {
		b := 2 + rng.NormFloat64()
		st.Add(Position{NLLBase: b, NLL: b + 0.05*rng.NormFloat64(), KLD: 0.01 * rng.ExpFloat64(),
			DeltaP: 0.02 * rng.NormFloat64(), SameTop: i%4 != 0})
		if i%60 == 59 {
			st.EndChunk()
		}
	}
	r := st.Report(121, 50, 2)
	var out bytes.Buffer
	if err := r.Print(&out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p",
		"   1    ", "   2    ", "",
		"====== Perplexity statistics ======",
		"Mean PPL(Q)                   : ", "Mean PPL(base)                : ", "Cor(ln(PPL(Q)), ln(PPL(base))): ",
		"Mean ln(PPL(Q)/PPL(base))     : ", "Mean PPL(Q)/PPL(base)         : ", "Mean PPL(Q)-PPL(base)         : ", "",
		"====== KL divergence statistics ======",
		"Mean    KLD: ", "Maximum KLD: ", "99.9%   KLD: ", "99.0%   KLD: ", "95.0%   KLD: ", "90.0%   KLD: ",
		"Median  KLD: ", "10.0%   KLD: ", " 5.0%   KLD: ", " 1.0%   KLD: ", " 0.1%   KLD: ", "Minimum KLD: ", "",
		"====== Token probability statistics ======",
		"Mean    Δp: ", "Maximum Δp: ", "99.9%   Δp: ", "99.0%   Δp: ", "95.0%   Δp: ", "90.0%   Δp: ", "75.0%   Δp: ",
		"Median  Δp: ", "25.0%   Δp: ", "10.0%   Δp: ", " 5.0%   Δp: ", " 1.0%   Δp: ", " 0.1%   Δp: ", "Minimum Δp: ",
		"RMS Δp    : ", "Same top p: 75.000 ± ",
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	lines = lines[3:] // definition, sizes, blank
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) || (w == "" && lines[i] != "") {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	// printf("%6.3lf ± %5.3lf %%") of 75% ± sqrt(.75·.25/119) = sqrt(0.0015756) = 3.969%.
	if last := lines[len(lines)-1]; last != "Same top p: 75.000 ± 3.969 %" {
		t.Errorf("last line %q", last)
	}
	data, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.KLD != r.KLD || back.SameTop != r.SameTop || *back.CorLnPPL != *r.CorLnPPL || len(back.KLDs) != 120 ||
		back.KLDPercentiles[3] != r.KLDPercentiles[3] {
		t.Errorf("JSON round trip lost values")
	}
	nan, _ := json.Marshal(Estimate{1, math.NaN()})
	if string(nan) != `{"value":1,"unc":null}` {
		t.Errorf("NaN uncertainty as %s", nan)
	}

	// Below 100 positions only the table and a note.
	var few Stats
	few.Add(Position{NLL: 1, NLLBase: 1, SameTop: true})
	few.EndChunk()
	out.Reset()
	few.Report(8, 5, 1).Print(&out)
	if s := out.String(); strings.Contains(s, "======") || !strings.Contains(s, "only 1 scored positions") {
		t.Errorf("report of 1 position:\n%s", s)
	}
}
