package forge

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// compareRun writes a synthetic report (and its KL .npy) into dir: KL =
// scale·Exp(1) at n positions from a seeded generator, the report's
// statistics computed from those values. It returns the two paths and
// the mean and median written.
func compareRun(t *testing.T, dir, name, definition, parts string, scale float64, seed uint64) (report, npy string, mean, median float64) {
	t.Helper()
	const n = 2001 // odd, so the median is one value
	rng := rand.New(rand.NewPCG(seed, 9))
	kl := make([]float32, n)
	v := make([]float64, n)
	for i := range kl {
		kl[i] = float32(scale * rng.ExpFloat64())
		v[i] = float64(kl[i])
		mean += v[i] / n
	}
	slices.Sort(v)
	median = v[n/2]
	fields := map[string]any{
		"n_positions": n, "mean_kl": mean, "median_kl": median, "p90_kl": v[n*9/10], "p99_kl": v[n*99/100],
		"p999_kl": v[n*999/1000], "max_kl": v[n-1], "top1": 0.9, "ppl": 8.0, "ref_ppl": 7.5, "mean_delta_p": -0.02,
		"bytes": int64(3_250_000), "bpw": 4.125, "definition": definition, "trace": "t.trace", "model": name,
	}
	if parts != "" {
		fields["parts"] = parts
	}
	data, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	report, npy = filepath.Join(dir, name+".json"), filepath.Join(dir, name+".npy")
	if err := os.WriteFile(report, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// NPY 1.0: magic, version, header length, dict padded to 64 bytes, data.
	hdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", n)
	hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	binary.Write(&b, binary.LittleEndian, kl)
	if err := os.WriteFile(npy, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return report, npy, mean, median
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	a, aKL, aMean, aMedian := compareRun(t, dir, "full", "top-256+tail", "", 0.1, 1)
	b, bKL, bMean, _ := compareRun(t, dir, "abl_mlp", "top-256+tail", "mlp", 0.03, 2)
	var out bytes.Buffer
	c, err := Compare(context.Background(), CompareConfig{Reports: []string{a, b}, KL: []string{aKL, bKL}, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 2 || len(c.Groups) != 1 {
		t.Fatalf("%d runs in %d groups, want 2 in 1", len(c.Runs), len(c.Groups))
	}
	// The row of "full": name, size (2 fields), bpw, positions, mean, median, ...
	var row []string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "full" {
			row = f
		}
	}
	want := []string{"full", "3.10", "MiB", "4.125", "2001", fmt.Sprintf("%.4f", aMean), fmt.Sprintf("%.4f", aMedian)}
	if len(row) < len(want) || !slices.Equal(row[:len(want)], want) {
		t.Errorf("row %q, want it to start %q; output:\n%s", row, want, out.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, "compare.md"))
	if err != nil || !strings.Contains(string(md), "| abl\\_mlp | 3.10 MiB | 4.125 | 2001 | "+fmt.Sprintf("%.4f", bMean)+" |") {
		t.Errorf("compare.md (%v):\n%s", err, md)
	}
	for _, name := range []string{"kl-cdf", "kl-position", "kl-parts"} {
		p := filepath.Join(dir, name+".png")
		if !strings.Contains(out.String(), "wrote "+p) {
			t.Errorf("output does not list %s:\n%s", p, out.String())
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		// 640×400 is far below any figure's size: a smaller one is unreadable.
		if err != nil || img.Bounds().Dx() < 640 || img.Bounds().Dy() < 400 {
			t.Errorf("%s: %v, %v", p, err, img.Bounds())
		}
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		var root struct{ XMLName xml.Name }
		if err := xml.Unmarshal(svg, &root); err != nil || root.XMLName.Local != "svg" {
			t.Errorf("%s.svg: root %q, %v; want <svg>", name, root.XMLName.Local, err)
		}
	}
}

func TestCompareOptions(t *testing.T) {
	dir := t.TempDir()
	a, _, _, _ := compareRun(t, dir, "lut4", "top-256+tail", "", 0.1, 1)
	b, _, _, _ := compareRun(t, dir, "lcpp", "llama.cpp", "", 0.1, 2)

	// Different definitions: two groups, a warning, no CDF without KL files.
	var out bytes.Buffer
	outDir := filepath.Join(dir, "new", "plots")
	c, err := Compare(context.Background(), CompareConfig{Reports: []string{a, b}, OutDir: outDir, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if len(c.Groups) != 2 || !strings.HasPrefix(s, "warning: ") || strings.Count(s, "definition: ") != 2 || !strings.Contains(s, "note: kl-cdf-g1") {
		t.Errorf("want a warning, two definition groups and a note on the skipped plots:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(outDir, "compare.md")); err != nil {
		t.Errorf("--out-dir: %v", err)
	}

	for _, c := range []struct {
		name string
		cfg  CompareConfig
		want string
	}{
		{"parts without ablations", CompareConfig{Reports: []string{a}, Parts: true}, "none of the 1 reports carries a parts or layers field"},
		{"missing report", CompareConfig{Reports: []string{a, filepath.Join(dir, "gone.json")}}, "gone.json"},
		{"no reports", CompareConfig{}, "no reports"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Compare(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := Compare(context.Background(), CompareConfig{Reports: []string{filepath.Join(dir, "gone.json")}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing report: %v, want fs.ErrNotExist", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compare(ctx, CompareConfig{Reports: []string{a}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
