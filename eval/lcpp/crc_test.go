package lcpp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/eval"
	"forge/safetensors"
)

// TestBaseChecksum: in a forge-layout base, one flipped low bit — of a
// token id, a code, a scale's or a min_log_prob's mantissa, or of a
// checksum — is refused naming the file and the part: the tokens by
// Open, a window by ReadWindow of that window (the others still
// read).
func TestBaseChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	h, wins := sampleBase(rng, -1)
	dir := t.TempDir()
	path := filepath.Join(dir, "base.safetensors")
	writeBase(t, path, h, wins, Forge)
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata()["lcpp_version"] != "2" {
		t.Errorf("lcpp_version %q", f.Metadata()["lcpp_version"])
	}
	infos := map[string]safetensors.TensorInfo{}
	for _, n := range f.Names() {
		infos[n], _ = f.Info(n)
	}
	f.Close()
	data, _ := os.ReadFile(path)
	hdr := 8 + int(binary.LittleEndian.Uint64(data))
	for _, c := range []struct {
		tensor string
		byteAt int // byte of the tensor whose lowest bit flips (a mantissa's lowest for F32)
		what   string
	}{
		{"tokens", 4 * 5, "tokens"},
		{"tokens.crc32c", 0, "tokens"},
		{"window.1.codes", 2 * 9, "window 1"},
		{"window.1.scale", 4 * 2, "window 1"},
		{"window.1.min_log_prob", 4 * 1, "window 1"},
		{"window.1.crc32c", 3, "window 1"},
	} {
		t.Run(c.tensor, func(t *testing.T) {
			bad := slices.Clone(data)
			bad[hdr+int(infos[c.tensor].Begin)+c.byteAt] ^= 1
			p := filepath.Join(dir, "flipped.safetensors")
			os.WriteFile(p, bad, 0o644)
			b, err := Open(p)
			if c.what == "tokens" {
				if !errors.Is(err, eval.ErrChecksum) || !errors.Is(err, ErrBase) || !strings.Contains(err.Error(), p+": tokens:") {
					t.Errorf("Open: %v, want a checksum error naming %s and the tokens", err, p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var w BaseWindow
			for i := range h.NChunk {
				err := b.ReadWindow(i, &w)
				if i != 1 && err != nil {
					t.Errorf("window %d, intact: %v", i, err)
				}
				if i == 1 && (!errors.Is(err, eval.ErrChecksum) || !strings.Contains(err.Error(), p+": window 1:")) {
					t.Errorf("window 1: %v, want a checksum error naming %s and window 1", err, p)
				}
			}
		})
	}
}

// TestBaseV1 (issue 11): a version 1 forge base (no checksums), made
// by forge at commit 8270692 (testdata/README.md), still opens and reads
// the same tokens, codes, scales and min_log_probs. The wanted values were
// printed by that forge reading the file: codes summed with weights
// (index+1), and Σ scale + 3·min_log_prob (exact: the same float32s added
// in the same order).
func TestBaseV1(t *testing.T) {
	b, err := Open(filepath.Join("testdata", "lcpp-v1-base.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wantTokens := []int{34, 82, 2347, 318, 262, 1667, 280, 1305, 278, 3341, 961, 281, 1445, 749, 2285, 13}
	if !slices.Equal(b.Tokens, wantTokens) || b.BOS != -1 || b.NCtx != 8 || b.NVocab != 4160 || b.NChunk != 2 || b.sums {
		t.Errorf("header: tokens %v, BOS %d, n_ctx %d, n_vocab %d, n_chunk %d, checksums %v",
			b.Tokens, b.BOS, b.NCtx, b.NVocab, b.NChunk, b.sums)
	}
	var codes uint64
	var f float64
	var w BaseWindow
	for i := range b.NChunk {
		if err := b.ReadWindow(i, &w); err != nil {
			t.Fatal(err)
		}
		for k, c := range w.Codes {
			codes += uint64(c) * uint64(k+1)
		}
		for j := range w.Scale {
			f += float64(w.Scale[j]) + 3*float64(w.MinLogProb[j])
		}
	}
	if got := fmt.Sprintf("%d %.17g", codes, f); got != "3666572855200 -276.47859289249755" {
		t.Errorf("windows read as %s", got)
	}
}
