package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// npyMagic starts every NPY file.
const npyMagic = "\x93NUMPY"

// npyFile describes an NPY file for writeNPY; the zero value of each field is the usual choice.
type npyFile struct {
	descr   string // default "<i4"
	version byte   // default 1
	fortran bool
	shape   string // default "(rows, cols)" from the rows
	header  string // replaces the whole header dict when set
}

// writeNPY encodes rows (all of one length) as numpy.save would: magic, version, header
// length, a header dict padded with spaces to a multiple of 64 bytes and ending in "\n", then
// the elements in little-endian order of descr's size.
func writeNPY(rows [][]int, f npyFile) []byte {
	if f.descr == "" {
		f.descr = "<i4"
	}
	if f.version == 0 {
		f.version = 1
	}
	if f.shape == "" {
		cols := 0
		if len(rows) > 0 {
			cols = len(rows[0])
		}
		f.shape = fmt.Sprintf("(%d, %d)", len(rows), cols)
	}
	order := "False"
	if f.fortran {
		order = "True"
	}
	header := f.header
	if header == "" {
		header = fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", f.descr, order, f.shape)
	}
	prefix := 10
	if f.version > 1 {
		prefix = 12
	}
	for (prefix+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	out := []byte(npyMagic)
	out = append(out, f.version, 0)
	if f.version > 1 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(header)))
	} else {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	}
	out = append(out, header...)
	size := int(f.descr[len(f.descr)-1] - '0')
	for _, r := range rows {
		for _, v := range r {
			switch size {
			case 1:
				out = append(out, byte(v))
			case 2:
				out = binary.LittleEndian.AppendUint16(out, uint16(v))
			case 4:
				out = binary.LittleEndian.AppendUint32(out, uint32(v))
			default:
				out = binary.LittleEndian.AppendUint64(out, uint64(v))
			}
		}
	}
	return out
}

// randomRows returns n rows of cols ids below vocab.
func randomRows(r *rand.Rand, n, cols, vocab int) [][]int {
	rows := make([][]int, n)
	for i := range rows {
		rows[i] = make([]int, cols)
		for j := range rows[i] {
			rows[i][j] = r.IntN(vocab)
		}
	}
	return rows
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNPYRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := tiny(t).VocabSize()
	tests := []struct {
		descr   string
		version byte
		vocab   int
	}{
		{"<i4", 1, vocab}, {"<i8", 1, vocab}, {"<i4", 2, vocab}, {"<i8", 3, vocab},
		{"<u2", 1, vocab}, {"<u4", 1, vocab}, {"<u8", 1, vocab}, {"<i2", 1, vocab},
		{"|u1", 1, 256}, {"|i1", 1, 128},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s_v%d", tc.descr, tc.version), func(t *testing.T) {
			rows := randomRows(r, 7, 13, tc.vocab)
			data := writeNPY(rows, npyFile{descr: tc.descr, version: tc.version})
			path := writeFile(t, "rows.npy", data)
			s := load(t, Spec{Path: path}, Options{})
			if !slices.EqualFunc(s.Rows, rows, slices.Equal) {
				t.Fatalf("rows differ")
			}
			if src := s.Sources[0]; src.Kind != NPY || src.Rows != 7 || src.Tokens != 7*13 || src.SHA256 != sha256Hex(data) {
				t.Errorf("source %+v", src)
			}
			// A positive Seq keeps each row's first Seq tokens.
			s = load(t, Spec{Path: path, Rows: 3}, Options{Seq: 5, Seed: 4})
			idx := Sample(7, 3, 4, 0)
			for i, row := range s.Rows {
				if !slices.Equal(row, rows[idx[i]][:5]) {
					t.Fatalf("row %d: %v, want the first 5 of row %d", i, row, idx[i])
				}
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := tiny(t).VocabSize()
	rows := randomRows(r, 6, 9, vocab)
	rows[2] = rows[2][:4] // ragged rows are kept when Seq is 0
	data, err := json.MarshalIndent(rows, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "rows.json", data)
	s := load(t, Spec{Path: path}, Options{})
	if !slices.EqualFunc(s.Rows, rows, slices.Equal) || s.Sources[0].Kind != JSON {
		t.Fatalf("rows differ: %v", s.Rows)
	}
	s = load(t, Spec{Path: path}, Options{Seq: 3})
	for i, row := range s.Rows {
		if !slices.Equal(row, rows[i][:3]) {
			t.Fatalf("row %d: %v, want %v", i, row, rows[i][:3])
		}
	}
	// Seq 5 is longer than row 2.
	_, err = Load([]Spec{{Path: path}}, tiny(t), Options{Seq: 5})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "row 2 has 4 tokens") {
		t.Errorf("error %v, want row 2 shorter than 5", err)
	}
}

func TestHostileFiles(t *testing.T) {
	vocab := tiny(t).VocabSize()
	rows := [][]int{{1, 2, 3}, {4, 5, 6}}
	good := writeNPY(rows, npyFile{})
	tests := []struct {
		name, file string
		data       []byte
		is         error
		want       string
	}{
		{"bad magic", "a.npy", append([]byte("\x93NUMPX"), good[6:]...), ErrFormat, "bad magic"},
		{"empty npy", "a.npy", nil, ErrFormat, "bad magic"},
		{"version 4", "a.npy", append(append([]byte(npyMagic), 4, 0), good[8:]...), ErrUnsupported, "version 4"},
		{"header past end", "a.npy", good[:40], ErrFormat, "header of"},
		{"fortran", "a.npy", writeNPY(rows, npyFile{fortran: true}), ErrUnsupported, "Fortran"},
		{"float dtype", "a.npy", writeNPY([][]int{{0, 0}}, npyFile{descr: "<f4"}), ErrUnsupported, `"<f4"`},
		{"big endian", "a.npy", writeNPY(rows, npyFile{descr: ">i4"}), ErrUnsupported, "big-endian"},
		{"structured dtype", "a.npy", writeNPY(nil, npyFile{header: "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (0, 1), }"}), ErrUnsupported, "descr"},
		{"1-D", "a.npy", writeNPY(rows, npyFile{shape: "(6,)"}), ErrUnsupported, "1 dimensions"},
		{"3-D", "a.npy", writeNPY(rows, npyFile{shape: "(1, 2, 3)"}), ErrUnsupported, "3 dimensions"},
		{"truncated data", "a.npy", good[:len(good)-3], ErrFormat, "needs 24 data bytes, file has 21"},
		{"trailing data", "a.npy", append(slices.Clone(good), 0, 0, 0, 0), ErrFormat, "file has 28"},
		{"absurd shape", "a.npy", writeNPY(rows, npyFile{shape: "(9223372036854775807, 9223372036854775807)"}), ErrFormat, "absurdly large"},
		{"large shape", "a.npy", writeNPY(rows, npyFile{shape: "(1000000, 1000)"}), ErrFormat, "needs 4000000000 data bytes, file has 24 (truncated)"},
		{"zero columns", "a.npy", writeNPY(nil, npyFile{shape: "(1000000000000, 0)"}), ErrFormat, "zero tokens"},
		{"no rows npy", "a.npy", writeNPY(nil, npyFile{shape: "(0, 4)"}), ErrTooFewRows, "no rows"},
		{"missing key", "a.npy", writeNPY(rows, npyFile{header: "{'descr': '<i4', 'shape': (2, 3)}"}), ErrFormat, "want keys"},
		{"extra key", "a.npy", writeNPY(rows, npyFile{header: "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"}), ErrFormat, "unexpected key"},
		{"garbage header", "a.npy", writeNPY(rows, npyFile{header: "descr=<i4"}), ErrFormat, "not a dict"},
		{"id out of vocab npy", "a.npy", writeNPY([][]int{{1, 2}, {3, vocab}}, npyFile{}), ErrTokenRange, fmt.Sprintf("row 1, position 1: id %d", vocab)},
		{"negative id npy", "a.npy", writeNPY([][]int{{1, -1}}, npyFile{descr: "<i8"}), ErrTokenRange, "id -1"},
		{"huge uint64", "a.npy", writeNPY([][]int{{-1}}, npyFile{descr: "<u8"}), ErrTokenRange, "fit"},
		{"id out of vocab json", "a.json", []byte(fmt.Sprintf("[[1], [2, %d]]", vocab+7)), ErrTokenRange, "row 1, position 1"},
		{"json syntax", "a.json", []byte("[[1, 2],\n [3,, 4]]"), ErrFormat, "line 2"},
		{"json float", "a.json", []byte("[[1, 2],\n\n [3.5]]"), ErrFormat, "line 3"},
		{"json not rows", "a.json", []byte(`{"rows": [[1]]}`), ErrFormat, "line 1"},
		{"json empty", "a.json", []byte(`[]`), ErrTooFewRows, "no rows"},
		{"json empty row", "a.json", []byte(`[[1], []]`), ErrFormat, "row 1 is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.data)
			_, err := Load([]Spec{{Path: path}}, tiny(t), Options{})
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %v naming %s and %q", err, tc.is, path, tc.want)
			}
		})
	}
}

// FuzzNPY: whatever bytes npyRows accepts become rectangular rows of at least one token (the
// codec itself is fuzzed in internal/npy).
func FuzzNPY(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []string{"<i4", "<i8", "<u2", "|u1"} {
		f.Add(writeNPY(randomRows(r, 3, 4, 100), npyFile{descr: d}))
	}
	f.Add(writeNPY(randomRows(r, 2, 2, 100), npyFile{version: 2}))
	f.Add(writeNPY(nil, npyFile{shape: "(5, 0)"}))
	f.Add([]byte(npyMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := npyRows(data)
		if err != nil {
			return
		}
		for _, row := range rows {
			if len(row) != len(rows[0]) || len(row) == 0 {
				t.Fatalf("ragged or empty rows from %q", data)
			}
		}
	})
}

func FuzzJSONRows(f *testing.F) {
	f.Add([]byte("[[1, 2], [3]]"))
	f.Add([]byte("[[1e99]]"))
	f.Add([]byte("\n\n[[1,"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = jsonRows(data)
	})
}
