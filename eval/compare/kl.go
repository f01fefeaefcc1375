package compare

import (
	"fmt"
	"math"
	"os"

	"forge/internal/npy"
)

// ReadKL reads a per-position KL array: an NPY file (package
// internal/npy parses it) holding a 1-D little-endian float32 ("<f4")
// array, or float64 ("<f8"), which is narrowed to float32, of finite
// values. Errors name the file and the problem and wrap ErrInput
// (and npy's sentinels) for a file that is not such an array.
func ReadKL(path string) ([]float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("KL file %s: %w", path, err)
	}
	kl, err := parseKL(data)
	if err != nil {
		return nil, fmt.Errorf("KL file %s: %w: %w", path, err, ErrInput)
	}
	return kl, nil
}

// parseKL decodes the bytes of a 1-D float NPY file of finite values.
func parseKL(data []byte) ([]float32, error) {
	a, err := npy.Parse(data)
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 1 {
		return nil, fmt.Errorf("shape %s has %d dimensions, want 1 (positions)", npy.FormatShape(a.Shape), len(a.Shape))
	}
	kl, err := a.Float32s()
	if err != nil {
		return nil, err
	}
	for i, v := range kl {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("position %d holds %v", i, v)
		}
	}
	return kl, nil
}
