package quant

import (
	"fmt"
	"testing"
)

// BenchmarkRTN times round-to-nearest quantization (codebook fit plus
// coding) of one 4096×4096 Gaussian matrix per format.
func BenchmarkRTN(b *testing.B) {
	w := gaussian(4096, 4096, true, 1)
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		f := mustFormat(b, name)
		b.Run(fmt.Sprint(f), func(b *testing.B) {
			for b.Loop() {
				if _, err := RTN(w, f, Options{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
