package layout

import (
	"errors"
	"fmt"

	"forge/lut"
	"forge/safetensors"
)

// Sentinels for errors.Is.
var (
	// ErrInexpressible: forge holds something the layout cannot (a grouped
	// codebook, a 3-bit scalar LUT, a rotated mixer input …).
	ErrInexpressible = errors.New("not expressible in the reference layout")
	// ErrLayout: a directory does not follow the layout (a missing or
	// extra tensor, a wrong dtype or shape, bad metadata, bad values).
	ErrLayout = errors.New("not the reference layout")
)

// Values of the sign_rng metadata key of a layer file with basis online:
// the generator its rotations' signs are drawn by (doc.go, "The
// rotation's signs").
const (
	// SignRNGForge: forge's PCG(seed, "HADAMARD") (lut.NewHadamard,
	// lut.SignsForge).
	SignRNGForge = "forge-pcg-v1"
	// SignRNGNumpy: numpy's default_rng(seed).choice([-1, 1], width)
	// (lut.NumpySigns, lut.SignsNumpy), what the reference draws; a layer
	// file with basis online and no sign_rng (the reference's own) means
	// it too.
	SignRNGNumpy = "numpy-default-rng-choice"
)

// SignRNG returns the sign_rng value of a sign generator.
func SignRNG(s lut.SignSource) string {
	if s == lut.SignsNumpy {
		return SignRNGNumpy
	}
	return SignRNGForge
}

// parseSignRNG returns the sign generator a layer file's sign_rng names
// (ok false: none, the reference's numpy generator); any other value is
// an error wrapping ErrInexpressible that names the file.
func parseSignRNG(file, v string, ok bool) (lut.SignSource, error) {
	switch {
	case !ok, v == SignRNGNumpy:
		return lut.SignsNumpy, nil
	case v == SignRNGForge:
		return lut.SignsForge, nil
	}
	return 0, fmt.Errorf("%s: %w: sign_rng %q: forge draws Hadamard signs as %q (numpy's default_rng(seed).choice, also meant by no sign_rng) or %q (its own PCG), not otherwise",
		file, ErrInexpressible, v, SignRNGNumpy, SignRNGForge)
}

// Metadata values of the basis key.
const (
	BasisOnline = "online"
	BasisPlain  = "plain"
)

// File names.
const HeadFile = "lm_head.safetensors"

// LayerFile is the MLP file of layer i: layer_%02d.safetensors.
func LayerFile(i int) string { return fmt.Sprintf("layer_%02d.safetensors", i) }

// MixerFile is the mixer file of layer i: layer_%02d_mixer.safetensors.
func MixerFile(i int) string { return fmt.Sprintf("layer_%02d_mixer.safetensors", i) }

// Spell returns the layout's spelling of format f for a matrix of out rows
// (the reference's names, docs/reference-pipeline.md §1.1, which are
// lut.Format.String without a group), and the format as the layout
// records it: a "group" that covers every row is one per-tensor codebook.
// A format the layout cannot hold is an error wrapping ErrInexpressible
// that says why: more than one codebook group, a 3- or 6-bit scalar LUT,
// or a vector LUT lut.Place finds inexpressible on the ANE.
func Spell(f lut.Format, out int) (string, lut.Format, error) {
	if err := f.Check(); err != nil {
		return "", f, err
	}
	if (f.Kind == lut.Scalar || f.Kind == lut.Vector) && f.Group > 0 {
		if g := f.Groups(out); g > 1 {
			return "", f, fmt.Errorf("%w: %s has %d row-grouped codebooks; the layout holds one codebook per matrix", ErrInexpressible, f, g)
		}
		f.Group = 0
	}
	if err := expressible(f); err != nil {
		return "", f, err
	}
	return f.String(), f, nil
}

// expressible refuses the per-tensor formats the layout has no spelling
// for.
func expressible(f lut.Format) error {
	switch {
	case f.Group > 0:
		return fmt.Errorf("%w: %s has row-grouped codebooks; the layout holds one codebook per matrix", ErrInexpressible, f)
	case f.Kind == lut.Scalar && (f.Bits == 3 || f.Bits == 6):
		return fmt.Errorf("%w: %s: the reference names scalar LUTs of 1, 2, 4 and 8 bits only (and the ANE reads %d-bit indices as %d-bit)",
			ErrInexpressible, f, f.Bits, map[int]int{3: 4, 6: 8}[f.Bits])
	case f.Kind == lut.Vector && f.Dim > lut.ANEMaxVecLen:
		return fmt.Errorf("%w: %s: vectors longer than %d are not expressible on the ANE", ErrInexpressible, f, lut.ANEMaxVecLen)
	case f.Kind == lut.Vector && f.Entries()*f.Dim > lut.ANEMaxLUTValues:
		return fmt.Errorf("%w: %s: a codebook of %d values exceeds the ANE's %d", ErrInexpressible, f, f.Entries()*f.Dim, lut.ANEMaxLUTValues)
	}
	return nil
}

// ParseFormat parses a format metadata value: one of the spellings Spell
// returns (case and the spaces around "+" do not matter, as in
// lut.ParseFormat). A format the layout cannot hold (a group, a 3-bit
// scalar LUT) is refused.
func ParseFormat(s string) (lut.Format, error) {
	f, err := lut.ParseFormat(s)
	if err != nil {
		return f, err
	}
	if err := expressible(f); err != nil {
		return f, err
	}
	return f, nil
}

// weightDType is the dtype of an unquantized matrix's k.weight.
func weightDType(f lut.Format) safetensors.DType {
	if f.Kind == lut.FP16 {
		return safetensors.F16
	}
	return safetensors.BF16
}

// Tensors lists the tensors a matrix of format f, shape [out, in] and
// low-rank rank r is stored as under key (doc.go, "Arrays"), in the order
// the writer puts them.
func Tensors(key string, f lut.Format, out, in, r int) []safetensors.TensorInfo {
	var ts []safetensors.TensorInfo
	switch f.Kind {
	case lut.Scalar, lut.Vector:
		ts = append(ts,
			safetensors.TensorInfo{Name: key + ".lut", DType: safetensors.F16, Shape: []int{f.Entries(), f.Dim}},
			safetensors.TensorInfo{Name: key + ".idx", DType: safetensors.U8, Shape: []int{out / f.Dim, in}},
			safetensors.TensorInfo{Name: key + ".scale", DType: safetensors.F16, Shape: []int{out}})
	case lut.Int8:
		ts = append(ts,
			safetensors.TensorInfo{Name: key + ".int8", DType: safetensors.I8, Shape: []int{out, in}},
			safetensors.TensorInfo{Name: key + ".scale", DType: safetensors.F16, Shape: []int{out}})
	default:
		return []safetensors.TensorInfo{{Name: key + ".weight", DType: weightDType(f), Shape: []int{out, in}}}
	}
	if r > 0 {
		ts = append(ts,
			safetensors.TensorInfo{Name: key + ".lr_a", DType: safetensors.F16, Shape: []int{out, r}},
			safetensors.TensorInfo{Name: key + ".lr_b", DType: safetensors.F16, Shape: []int{r, in}})
	}
	return ts
}
