package forge

import (
	"path/filepath"
	"strings"
	"testing"

	"forge/source"
)

// TestLayoutWarnings: a bundle written before index arrays were aligned
// (bundle/testdata/v1-tiny) gets a warning that names it and says what to
// do; a Hugging Face checkpoint gets none.
func TestLayoutWarnings(t *testing.T) {
	for _, c := range []struct {
		dir  string
		want bool
	}{
		{filepath.Join("bundle", "testdata", "v1-tiny"), true},
		{filepath.Join("models", "forge-tiny"), false},
	} {
		src, err := source.Open(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		w := layoutWarnings(c.dir, src)
		src.Close()
		if got := len(w) > 0; got != c.want {
			t.Fatalf("%s: warnings %q, want some: %v", c.dir, w, c.want)
		}
		if c.want && (!strings.Contains(w[0], c.dir) || !strings.Contains(w[0], "forge quantize") || !strings.Contains(w[0], "index arrays")) {
			t.Errorf("%s: warning %q does not name the bundle, the problem and the fix", c.dir, w[0])
		}
	}
}
