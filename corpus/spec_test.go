package corpus

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
		err  string // substring of the error; "" for success
	}{
		{"data/a.txt", Spec{Path: "data/a.txt"}, ""},
		{"data/a.txt:128", Spec{Path: "data/a.txt", Rows: 128}, ""},
		{"a:b.jsonl:7", Spec{Path: "a:b.jsonl", Rows: 7}, ""},
		{"a.npy:007", Spec{Path: "a.npy", Rows: 7}, ""},
		{"", Spec{}, "empty"},
		{"file:", Spec{}, "no row count"},
		{":5", Spec{}, "no file"},
		{":", Spec{}, "no file"},
		{"file:abc", Spec{}, `"abc" is not a positive integer`},
		{"file:-3", Spec{}, `"-3" is not a positive integer`},
		{"file:+3", Spec{}, `"+3" is not a positive integer`},
		{"file:1.5", Spec{}, "not a positive integer"},
		{"file: 4", Spec{}, "not a positive integer"},
		{"file:0", Spec{}, "must be positive"},
		{"file:99999999999999999999999", Spec{}, "too large"},
		{"a:b.txt", Spec{}, "not a positive integer"},
	}
	for _, tc := range tests {
		got, err := ParseSpec(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseSpec(%q): error %v, want ErrSpec mentioning %q", tc.in, err, tc.err)
		}
	}
}

func TestKindOf(t *testing.T) {
	for path, want := range map[string]Kind{
		"a.txt": Text, "dir.v2/a.TXT": Text, "a.jsonl": Chat, "a.json": JSON, "x/y.npy": NPY,
	} {
		if got, err := KindOf(path); err != nil || got != want {
			t.Errorf("KindOf(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"a.csv", "a", "a.txt.gz", "a.npz"} {
		_, err := KindOf(path)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), ".jsonl") {
			t.Errorf("KindOf(%q): error %v", path, err)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"a.txt", "a.txt:12", "a:b:3", ":", "x:-1", "::::9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		if sp.Path == "" || sp.Rows < 0 {
			t.Fatalf("ParseSpec(%q) = %+v", s, sp)
		}
		// A parsed spec prints back to a string that parses to it again.
		back, err := ParseSpec(sp.String())
		if err != nil || back != sp {
			t.Fatalf("ParseSpec(%q) = %+v prints as %q, which parses to %+v, %v", s, sp, sp.String(), back, err)
		}
	})
}
