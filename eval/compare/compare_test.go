package compare

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"gonum.org/v1/plot/vg"

	"forge/eval"
)

// synthRun describes a synthetic evaluation: KL drawn as scale·Exp(1) at
// n positions, so mean ≈ scale, median ≈ scale·ln 2, p99 ≈ scale·ln 100.
// rows > 0 gives the report a row layout: rows rows of n/rows positions,
// the first half from code.txt, the rest from prose.txt.
type synthRun struct {
	name, definition, parts, layers string
	scale                           float64
	n, rows                         int
	bytes                           int64
	bpw, top1, ppl                  float64
}

// synthKL draws the run's per-position KL from a seeded generator.
func (s synthRun) synthKL(seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	kl := make([]float32, s.n)
	for i := range kl {
		kl[i] = float32(s.scale * rng.ExpFloat64())
	}
	return kl
}

// quantile is the linearly interpolated quantile f of sorted values
// (position f·(N−1), as llama.cpp and numpy compute it).
func quantile(sorted []float64, f float64) float64 {
	pos := f * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// stats returns the report fields computed from kl as an evaluator would.
func stats(kl []float32) map[string]any {
	v := make([]float64, len(kl))
	var sum float64
	for i, x := range kl {
		v[i] = float64(x)
		sum += v[i]
	}
	slices.Sort(v)
	return map[string]any{
		"n_positions": len(kl), "mean_kl": sum / float64(len(v)), "median_kl": quantile(v, 0.5),
		"p90_kl": quantile(v, 0.9), "p99_kl": quantile(v, 0.99), "p999_kl": quantile(v, 0.999), "max_kl": v[len(v)-1],
	}
}

// writeSynth writes the run's report (and KL file when withKL) into dir
// and returns their paths and the report's fields.
func writeSynth(t *testing.T, dir string, s synthRun, seed uint64, withKL bool) (report, klPath string, fields map[string]any) {
	t.Helper()
	kl := s.synthKL(seed)
	fields = stats(kl)
	fields["definition"] = s.definition
	fields["trace"] = "trace.bin"
	fields["model"] = "bundles/" + s.name
	fields["bytes"], fields["bpw"], fields["top1"], fields["ppl"], fields["ref_ppl"] = s.bytes, s.bpw, s.top1, s.ppl, 7.25
	fields["mean_delta_p"] = -0.01
	fields["some_future_field"] = []int{1, 2} // unknown fields are ignored
	if s.parts != "" {
		fields["parts"] = s.parts
	}
	if s.layers != "" {
		fields["layers"] = s.layers
	}
	if s.rows > 0 {
		fields["row_positions"] = slices.Repeat([]int{s.n / s.rows}, s.rows)
		fields["sources"] = []eval.RowSource{{Path: "data/code.txt", Rows: s.rows / 2}, {Path: "data/prose.txt", Rows: s.rows - s.rows/2}}
	}
	report = filepath.Join(dir, s.name+".json")
	writeJSON(t, report, fields)
	if withKL {
		klPath = filepath.Join(dir, s.name+".npy")
		writeNPY(t, klPath, kl, 1)
	}
	return report, klPath, fields
}

// writeJSON writes v as JSON to path.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// encodeNPY returns a 1-D '<f4' NPY file of kl in format version major.
func encodeNPY(kl []float32, major byte) []byte {
	header := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", len(kl))
	prefix := 10
	if major > 1 {
		prefix = 12
	}
	for (prefix+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY")
	b.Write([]byte{major, 0})
	if major > 1 {
		binary.Write(&b, binary.LittleEndian, uint32(len(header)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	}
	b.WriteString(header)
	binary.Write(&b, binary.LittleEndian, kl)
	return b.Bytes()
}

// writeNPY writes kl as a 1-D float32 NPY file.
func writeNPY(t *testing.T, path string, kl []float32, major byte) {
	t.Helper()
	if err := os.WriteFile(path, encodeNPY(kl, major), 0o644); err != nil {
		t.Fatal(err)
	}
}

// threeRuns are three candidates of one definition; two are ablations.
var threeRuns = []synthRun{
	{name: "lut4", definition: "forge top-256+tail", scale: 0.05, n: 4000, rows: 16, bytes: 1_500_000_000, bpw: 4.25, top1: 0.93, ppl: 7.5},
	{name: "abl_mlp", definition: "forge top-256+tail", parts: "mlp", scale: 0.02, n: 4000, rows: 16, bytes: 1_200_000_000, bpw: 3.5, top1: 0.955, ppl: 7.3},
	{name: "band_24-31", definition: "forge top-256+tail", parts: "mlp", layers: "24-31", scale: 0.004, n: 4000, rows: 16, bytes: 2_000_000, bpw: 2.5, top1: 0.99125, ppl: 7.26},
}

// writeRuns writes runs into a fresh directory and returns the paths.
func writeRuns(t *testing.T, runs []synthRun, withKL bool) (dir string, reports, kls []string, fields []map[string]any) {
	dir = t.TempDir()
	for i, s := range runs {
		r, k, f := writeSynth(t, dir, s, uint64(i+1), withKL)
		reports, kls, fields = append(reports, r), append(kls, k), append(fields, f)
	}
	return dir, reports, kls, fields
}

func TestSynthKLStatistics(t *testing.T) {
	// The generator must have the statistics the tests rely on. For
	// Exp(scale) at n = 4000 the sample mean has relative standard error
	// 1/√n ≈ 1.6%, the median ≈ 2.3%; 8% is five standard errors.
	for _, s := range threeRuns {
		f := stats(s.synthKL(7))
		for _, c := range []struct {
			name      string
			got, want float64
			rtol      float64
		}{
			{"mean", f["mean_kl"].(float64), s.scale, 0.08},
			{"median", f["median_kl"].(float64), s.scale * math.Ln2, 0.08},
			// the p99's standard error is about 1/(√(n·0.01)·ln 100) ≈ 3.4% relative; 17% is five.
			{"p99", f["p99_kl"].(float64), s.scale * math.Log(100), 0.17},
		} {
			if math.Abs(c.got-c.want) > c.rtol*c.want {
				t.Errorf("%s: %s KL %g, want %g ± %.0f%%", s.name, c.name, c.got, c.want, 100*c.rtol)
			}
		}
	}
}

// expectedCells are the table cells of a synthetic run, formatted here
// independently of the code under test.
func expectedCells(s synthRun, f map[string]any) []string {
	kl := func(k string) string { return fmt.Sprintf("%.4f", f[k].(float64)) }
	size := fmt.Sprintf("%.2f GiB", float64(s.bytes)/(1<<30))
	if s.bytes < 1<<30 {
		size = fmt.Sprintf("%.2f MiB", float64(s.bytes)/(1<<20))
	}
	cells := []string{s.name, size, fmt.Sprintf("%.3f", s.bpw), fmt.Sprint(s.n), kl("mean_kl"), kl("median_kl"), kl("p99_kl"),
		fmt.Sprintf("%.2f", 100*s.top1), fmt.Sprintf("%.4f", s.ppl), "7.2500"}
	return append(cells, orNone(s.parts), orNone(s.layers))
}

func TestCompareTable(t *testing.T) {
	_, reports, kls, fields := writeRuns(t, threeRuns, true)
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 1 || len(c.Warnings) != 0 {
		t.Fatalf("groups %d, warnings %q; want one group, no warnings", len(c.Groups), c.Warnings)
	}
	var out bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3+len(threeRuns) || lines[0] != "definition: forge top-256+tail" || lines[1] != "trace: trace.bin" {
		t.Fatalf("table:\n%s", out.String())
	}
	// Column order: run, size, bpw, positions, mean, median, p99, top-1, ppl, ref ppl, parts, layers.
	head := []string{"run", "size", "bpw", "positions", "mean KL", "median KL", "p99 KL", "top-1 %", "ppl", "ref ppl", "parts", "layers"}
	if got := strings.Fields(lines[2]); strings.Join(got, " ") != strings.Join(head, " ") {
		t.Errorf("header %q, want %q", got, head)
	}
	for i, s := range threeRuns {
		want := expectedCells(s, fields[i])
		// Sizes hold a space ("1.50 GB"): compare the fields of the line.
		if got := strings.Fields(lines[3+i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got, want)
		}
	}
	// Alignment: the numbers are right-aligned, so every row's numeric
	// cells end where the header's "ref ppl" ends, and the text columns
	// after it (parts, layers) start where their headers start.
	hp := utf8.RuneCountInString(lines[2][:strings.Index(lines[2], "parts")])
	for _, l := range lines[3:] {
		if r := []rune(l); len(r) <= hp || r[hp-1] != ' ' || r[hp-3] == ' ' || r[hp] == ' ' {
			t.Errorf("row %q: columns not aligned with the header %q", l, lines[2])
		}
	}

	var md bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for i, s := range threeRuns {
		cells := expectedCells(s, fields[i])
		for j := range cells {
			cells[j] = mdEscape(cells[j])
		}
		if row := "| " + strings.Join(cells, " | ") + " |"; !strings.Contains(md.String(), row+"\n") {
			t.Errorf("markdown lacks row %q:\n%s", row, md.String())
		}
	}
	if !strings.Contains(md.String(), "| :--- | ---: | ---: |") {
		t.Errorf("markdown table lacks alignment row:\n%s", md.String())
	}
}

func TestCompareDefinitionGroups(t *testing.T) {
	runs := slices.Clone(threeRuns)
	runs[1].definition = "llama.cpp kl-divergence"
	dir, reports, kls, _ := writeRuns(t, runs, true)
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || len(c.Groups[0].Runs) != 2 || len(c.Groups[1].Runs) != 1 || c.Groups[1].Runs[0].Name != "abl_mlp" {
		t.Fatalf("groups %+v: want {lut4, band_24-31}, {abl_mlp}", c.Groups)
	}
	var out bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	first, second := strings.Index(text, "definition: forge"), strings.Index(text, "definition: llama.cpp")
	if !strings.HasPrefix(text, "warning: the reports use 2 different KL definitions") || first < 0 || second < first {
		t.Fatalf("table lacks the warning or the two groups:\n%s", text)
	}
	if i := strings.Index(text, "abl_mlp"); i < second {
		t.Errorf("abl_mlp is listed outside its own definition's group:\n%s", text)
	}
	files, _, err := c.Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kl-cdf-g1.png", "kl-cdf-g2.svg", "kl-position-g2.png", "kl-parts-g1.svg", "kl-parts-g2.png"} {
		if !slices.Contains(files, filepath.Join(dir, name)) {
			t.Errorf("Plot wrote %q, want %s among them", files, name)
		}
	}
}

func TestComparePlots(t *testing.T) {
	dir, reports, kls, _ := writeRuns(t, threeRuns, true)
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	files, notes, err := c.Plot(filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 || len(files) != 6 {
		t.Fatalf("files %q notes %q: want 3 plots × (png, svg), no notes", files, notes)
	}
	wantW, wantH := int(plotWidth/vg.Inch*plotDPI), int(plotHeight/vg.Inch*plotDPI)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			cfg, err := png.DecodeConfig(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			// The parts figure stacks two panels: 1.5 × the height; the
			// position figure one panel per source under its title.
			h := wantH
			if strings.Contains(f, "kl-parts") {
				h = wantH * 3 / 2
			}
			if strings.Contains(f, "kl-position") {
				h = int((titleHeight + 2*panelHeight) / vg.Inch * plotDPI)
			}
			if cfg.Width != wantW || cfg.Height != h {
				t.Errorf("%s: %d×%d pixels, want %d×%d", f, cfg.Width, cfg.Height, wantW, h)
			}
			if _, err := png.Decode(bytes.NewReader(data)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		case ".svg":
			checkSVG(t, f, data)
		}
	}

	// Same input, same bytes.
	again, _, err := c.Plot(filepath.Join(dir, "again"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		a, _ := os.ReadFile(files[i])
		b, _ := os.ReadFile(again[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ: plots are not deterministic", files[i], again[i])
		}
	}
}

// checkSVG checks that data parses as XML with an <svg> root and embeds its fonts.
func checkSVG(t *testing.T, path string, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := d.Token()
		if err != nil {
			if root == "" {
				t.Errorf("%s: no root element: %v", path, err)
			} else if err.Error() != "EOF" {
				t.Errorf("%s: %v", path, err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element <%s>, want <svg>", path, root)
	}
	if !bytes.Contains(data, []byte("@font-face")) {
		t.Errorf("%s: fonts are not embedded", path)
	}
}

func TestComparePlotsWithoutKL(t *testing.T) {
	dir, reports, _, _ := writeRuns(t, threeRuns[:1], false)
	c, err := Load(reports, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, notes, err := c.Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "skipped") || !strings.Contains(notes[0], "no per-position KL files") {
		t.Errorf("files %q notes %q: want nothing written and a note saying the KL files are missing", files, notes)
	}
}

func TestCompareKLOrderWarning(t *testing.T) {
	_, reports, kls, _ := writeRuns(t, threeRuns[:2], true)
	c, err := Load(reports, []string{kls[1], kls[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "wrong order") {
		t.Errorf("warnings %q: want one per swapped KL file", c.Warnings)
	}
}

func TestCompareNames(t *testing.T) {
	dir := t.TempDir()
	var reports []string
	for _, sub := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
		r, _, _ := writeSynth(t, filepath.Join(dir, sub), threeRuns[0], 1, false)
		reports = append(reports, r)
	}
	c, err := Load(append(reports, reports[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range c.Runs {
		names = append(names, r.Name)
	}
	if want := []string{"a/lut4", "b/lut4", "a/lut4 (2)"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
}

func TestLooseString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"mlp"`, "mlp"}, {`["mlp", "gdn"]`, "mlp,gdn"}, {`[24, 31]`, "24,31"}, {`null`, ""}, {`{"a": 1}`, `{"a":1}`},
	} {
		var s looseString
		if err := json.Unmarshal([]byte(c.in), &s); err != nil || string(s) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.in, s, err, c.want)
		}
	}
}

func TestFormatKL(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0, "0.0000"}, {0.185, "0.1850"}, {2.25, "2.2500"}, {5e-4, "5.00e-04"}, {-2e-5, "-2.00e-05"}} {
		if got := formatKL(c.in); got != c.want {
			t.Errorf("formatKL(%g) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   int64
		want string
	}{{0, "–"}, {999, "999 B"}, {1536, "1.5 KiB"}, {15_400_000_000, "14.34 GiB"}} {
		if got := formatBytes(c.in); got != c.want {
			t.Errorf("formatBytes(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadKL(t *testing.T) {
	dir := t.TempDir()
	kl := threeRuns[0].synthKL(3)
	for _, major := range []byte{1, 2} {
		path := filepath.Join(dir, fmt.Sprintf("v%d.npy", major))
		writeNPY(t, path, kl, major)
		got, err := ReadKL(path)
		if err != nil || !slices.Equal(got, kl) {
			t.Errorf("version %d: %d values, %v; want the %d written", major, len(got), err, len(kl))
		}
	}
}

func TestCompareErrors(t *testing.T) {
	dir, reports, kls, fields := writeRuns(t, threeRuns[:2], true)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	without := func(drop ...string) []byte {
		m := map[string]any{}
		for k, v := range fields[0] {
			if !slices.Contains(drop, k) {
				m[k] = v
			}
		}
		b, _ := json.Marshal(m)
		return b
	}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for k, v := range fields[0] {
			m[k] = v
		}
		m[k] = v
		b, _ := json.Marshal(m)
		return b
	}
	good := encodeNPY(threeRuns[0].synthKL(1), 1)
	f8 := bytes.Replace(slices.Clone(good), []byte("'<f4'"), []byte("'>f4'"), 1)
	twoD := bytes.Replace(slices.Clone(good), []byte("(4000,), } "), []byte("(40,100), }"), 1) // same header length
	missing := filepath.Join(dir, "nope.json")
	for _, c := range []struct {
		name         string
		reports, kls []string
		file, want   string // the file the error must name and a phrase
		sentinel     error
	}{
		{"no reports", nil, nil, "", "no reports", ErrInput},
		{"missing report", []string{reports[0], missing}, nil, missing, "no such file", fs.ErrNotExist},
		{"not JSON", []string{write("bad.json", []byte("{\"mean_kl\": 0.1,"))}, nil, "bad.json", "not a JSON object", ErrInput},
		{"missing fields", []string{write("short.json", without("mean_kl", "definition"))}, nil, "short.json", "missing field(s) definition, mean_kl", ErrInput},
		{"null field", []string{write("null.json", with("ppl", nil))}, nil, "null.json", "missing field(s) ppl", ErrInput},
		{"wrong type", []string{write("type.json", with("mean_kl", "0.1"))}, nil, "type.json", "mean_kl", ErrInput},
		{"top1 percent", []string{write("pct.json", with("top1", 93.5))}, nil, "pct.json", "not a fraction", ErrInput},
		{"KL count", reports, kls[:1], "", "1 KL files for 2 reports", ErrInput},
		{"missing KL", reports[:1], []string{missing}, missing, "no such file", fs.ErrNotExist},
		{"KL length", reports[:1], []string{write("short.npy", encodeNPY(make([]float32, 10), 1))}, "short.npy", "has 10 positions", ErrInput},
		{"KL magic", reports[:1], []string{write("magic.npy", []byte("not numpy at all"))}, "magic.npy", "bad magic", ErrInput},
		{"KL dtype", reports[:1], []string{write("be.npy", f8)}, "be.npy", "dtype", ErrInput},
		{"KL 2-D", reports[:1], []string{write("2d.npy", twoD)}, "2d.npy", "2 dimensions", ErrInput},
		{"KL truncated", reports[:1], []string{write("cut.npy", good[:len(good)-3])}, "cut.npy", "needs 16000 data bytes", ErrInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.reports, c.kls)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.sentinel) {
				t.Errorf("error %q: want it to name %q, say %q and match %v", err, c.file, c.want, c.sentinel)
			}
		})
	}
}

func TestComparePlotsDegenerate(t *testing.T) {
	// A one-position run with KL 0 and a run of slightly negative KL
	// (llama.cpp's truncated sum) must plot without panicking: both sit
	// at the left edge of the log axes.
	dir := t.TempDir()
	var reports, kls []string
	for i, kl := range [][]float32{{0}, {-1e-6, -2e-6, 0, 1e-7}} {
		f := stats(kl)
		f["definition"], f["top1"], f["ppl"], f["parts"] = "full", 1.0, 1.0, "head"
		r, k := filepath.Join(dir, fmt.Sprintf("r%d.json", i)), filepath.Join(dir, fmt.Sprintf("r%d.npy", i))
		writeJSON(t, r, f)
		writeNPY(t, k, kl, 1)
		reports, kls = append(reports, r), append(kls, k)
	}
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := c.Plot(dir)
	if err != nil || len(files) != 6 {
		t.Fatalf("files %q, %v: want 3 plots × 2 formats", files, err)
	}
}

// TestCompareParetoPlot: full runs that report their size get kl-bpw,
// mean KL against bits per weight with the Pareto front of the runs: a run
// with more bits and more KL than another is drawn but is not on the
// front; ablation runs are left out of it.
func TestCompareParetoPlot(t *testing.T) {
	runs := []synthRun{
		{name: "p2", definition: "forge full", scale: 0.05, n: 400, bpw: 2.6},
		{name: "p3", definition: "forge full", scale: 0.01, n: 400, bpw: 3.25},
		{name: "u3", definition: "forge full", scale: 0.03, n: 400, bpw: 3.3}, // dominated by p3
		{name: "p4", definition: "forge full", scale: 0.004, n: 400, bpw: 4.1},
		{name: "abl", definition: "forge full", parts: "mlp", scale: 0.001, n: 400, bpw: 1},
	}
	dir, reports, kls, _ := writeRuns(t, runs, true)
	c, err := Load(reports, kls)
	if err != nil {
		t.Fatal(err)
	}
	sized, front, _ := frontRuns(c.Groups[0].Runs)
	var on, names []string
	for i, r := range sized {
		names = append(names, r.Name)
		if front[i] {
			on = append(on, r.Name)
		}
	}
	if !slices.Equal(names, []string{"p2", "p3", "u3", "p4"}) || !slices.Equal(on, []string{"p2", "p3", "p4"}) {
		t.Fatalf("runs by bpw %q, front %q: want p2 p3 u3 p4, front p2 p3 p4", names, on)
	}
	files, _, err := c.Plot(filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		if strings.Contains(f, "kl-bpw") {
			got = append(got, filepath.Base(f))
			data, _ := os.ReadFile(f)
			if filepath.Ext(f) == ".svg" {
				checkSVG(t, f, data)
				for _, label := range []string{"p2", "u3", "p4", "Pareto front"} {
					if !bytes.Contains(data, []byte(label)) {
						t.Errorf("kl-bpw.svg does not show %q", label)
					}
				}
			}
		}
	}
	if !slices.Equal(got, []string{"kl-bpw.png", "kl-bpw.svg"}) {
		t.Errorf("kl-bpw files %q", got)
	}
}

// TestFrontRunsBlocks: when every full run reports the blocks' bpw the
// front is drawn against it (the head left out of the size); when one
// does not, against the bpw of all the quantizable matrices.
func TestFrontRunsBlocks(t *testing.T) {
	runs := []*Run{
		{Name: "plan", BPW: 5.8, BlocksBPW: 4.1, MeanKL: 0.0016},
		{Name: "uniform", BPW: 4.6, BlocksBPW: 4.05, MeanKL: 0.0031},
		{Name: "rtn", BPW: 4.05, BlocksBPW: 4.05, MeanKL: 0.008},
	}
	sized, front, blocks := frontRuns(runs)
	if !blocks || sized[0].Name != "uniform" || sized[1].Name != "rtn" || sized[2].Name != "plan" || !front[0] || front[1] || !front[2] {
		t.Errorf("blocks %v, order %s %s %s, front %v", blocks, sized[0].Name, sized[1].Name, sized[2].Name, front)
	}
	runs[2].BlocksBPW = 0
	sized, _, blocks = frontRuns(runs)
	if blocks || sized[0].Name != "rtn" || sized[2].Name != "plan" {
		t.Errorf("without every blocks bpw: blocks %v, first %s, last %s", blocks, sized[0].Name, sized[2].Name)
	}
}
