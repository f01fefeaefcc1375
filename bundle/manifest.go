package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"forge/lut"
)

// FormatVersion is the bundle layout version this package writes. Open
// reads it and version 1 (doc.go, "Versions").
const FormatVersion = 2

// ManifestName is the manifest's file name.
const ManifestName = "forge.json"

// Manifest is forge.json.
type Manifest struct {
	FormatVersion int           `json:"format_version"`
	ForgeVersion  string        `json:"forge_version"`
	Source        SourceInfo    `json:"source"`
	Quant         QuantInfo     `json:"quantization"`
	Matrices      []MatrixEntry `json:"matrices"`
	Files         []FileEntry   `json:"files"`
	// ContentSHA256 (version 2) is the hex SHA-256 of the manifest's
	// canonical content: ContentHash of the manifest with this field empty.
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// SourceInfo identifies the checkpoint a bundle was made from.
type SourceInfo struct {
	Path        string `json:"path"`
	Fingerprint string `json:"fingerprint"` // sha256 of config.json and the safetensors headers
}

// QuantInfo records how the matrices were quantized.
type QuantInfo struct {
	Method string `json:"method"` // "rtn"
	Seed   uint64 `json:"seed"`
	Format string `json:"format"` // the default format
	// Recipe holds method-specific settings (calibration, plan, rotation).
	Recipe map[string]any `json:"recipe,omitempty"`
}

// MatrixEntry describes one matrix of the model as stored.
type MatrixEntry struct {
	Name   string  `json:"name"` // e.g. "layers.0.mlp.up_proj.weight"
	Format string  `json:"format"`
	Shape  [2]int  `json:"shape"` // [out, in]
	Rank   int     `json:"rank,omitempty"`
	Raw    bool    `json:"raw,omitempty"` // kept in its source dtype, stored under its own name
	Bytes  int64   `json:"bytes"`
	BPW    float64 `json:"bpw"`
	// Rotation, if set, is the online input rotation the stored weights
	// and low-rank factors are expressed in (docs/quantization.md §3).
	Rotation *RotationEntry `json:"rotation,omitempty"`
	// SNR, if set, is the held-out output-space SNR of the matrix.
	SNR *SNREntry `json:"heldout_snr_db,omitempty"`
}

// RotationEntry records an online block Hadamard rotation: blocks of
// Block columns, signs drawn from Seed by the generator Signs names
// (lut.SignSource). Signs is absent for forge's own generator
// (lut.NewHadamard(in, Seed)), which every rotation forge's quantizer
// makes and every bundle written before the field existed has, and
// "numpy" for numpy's default_rng(Seed).choice([-1, 1], in)
// (lut.NewHadamardSigns(in, Seed, lut.SignsNumpy)): the reference
// pipeline's rotations, which forge import brings in. Any other value is
// refused (SignSource).
type RotationEntry struct {
	Kind  string `json:"kind"` // "hadamard"
	Seed  uint64 `json:"seed"`
	Block int    `json:"block"`
	Signs string `json:"signs,omitempty"` // "" (forge's PCG) or "numpy"
}

// SignsNumpy is RotationEntry.Signs of a rotation with numpy's signs.
const SignsNumpy = "numpy"

// NewRotationEntry records a Hadamard rotation with the given seed, block
// width and sign generator.
func NewRotationEntry(seed uint64, block int, signs lut.SignSource) *RotationEntry {
	r := &RotationEntry{Kind: "hadamard", Seed: seed, Block: block}
	if signs == lut.SignsNumpy {
		r.Signs = SignsNumpy
	}
	return r
}

// SignSource returns the generator r.Signs names: lut.SignsForge when it
// is absent, lut.SignsNumpy for "numpy"; any other value is an error.
func (r *RotationEntry) SignSource() (lut.SignSource, error) {
	switch r.Signs {
	case "":
		return lut.SignsForge, nil
	case SignsNumpy:
		return lut.SignsNumpy, nil
	}
	return 0, fmt.Errorf("rotation signs %q: not a sign generator this forge knows (%q, or none for forge's own)", r.Signs, SignsNumpy)
}

// SNREntry is a matrix's output-space SNR in dB on held-out calibration
// rows, 10·log10(tr(W H Wᵀ) / tr(E H Eᵀ)): with nearest rounding and with
// the method used (GPTQ), both before any low-rank correction, and Final,
// the stored matrix (with its correction). Refit, when the recipe refit
// the codebooks and scales, is the refit values' SNR (kept, Refitted, only
// when above Method; absent when the refit changed nothing on the
// training rows).
type SNREntry struct {
	RTN      float64  `json:"rtn"`
	Method   float64  `json:"method"`
	Final    float64  `json:"final"`
	Refit    *float64 `json:"refit,omitempty"`
	Refitted bool     `json:"refitted,omitempty"`
}

// FileEntry is one file of the bundle with its size and SHA-256.
type FileEntry struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ContentHash returns the hex SHA-256 of the manifest's canonical content:
// encoding/json's compact encoding of m with ContentSHA256 empty (fields in
// declaration order, recipe keys sorted, numbers in Go's shortest
// round-trip form), so reformatting forge.json does not change it but any
// edit of a value does.
func (m *Manifest) ContentHash() (string, error) {
	c := *m
	c.ContentSHA256 = ""
	raw, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// hashFile returns the size and hex SHA-256 of a file.
func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// ReadManifest reads dir/forge.json and checks what it can alone: the
// format version (1 or 2), a file list, no matrix listed twice, and (for
// version 2) the presence of the content hash. Open checks the rest.
func ReadManifest(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(dir + string(os.PathSeparator) + ManifestName)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("bundle %s: no %s: not a bundle, or an export that did not finish", dir, ManifestName)
		}
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w", dir, ManifestName, err)
	}
	if m.FormatVersion != 1 && m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("bundle %s: %s: format_version %d, this forge reads 1 and %d", dir, ManifestName, m.FormatVersion, FormatVersion)
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("bundle %s: %s lists no files", dir, ManifestName)
	}
	seen := make(map[string]bool, len(m.Matrices))
	for _, e := range m.Matrices {
		if seen[e.Name] {
			return nil, fmt.Errorf("bundle %s: %s: matrix %q is listed twice", dir, ManifestName, e.Name)
		}
		seen[e.Name] = true
	}
	if m.FormatVersion >= 2 && m.ContentSHA256 == "" {
		return nil, fmt.Errorf("bundle %s: %s: format_version %d without content_sha256", dir, ManifestName, m.FormatVersion)
	}
	if m.FormatVersion == 1 && m.ContentSHA256 != "" {
		return nil, fmt.Errorf("bundle %s: %s: format_version 1 with a content_sha256 (version 2 edited down to 1?)", dir, ManifestName)
	}
	return &m, nil
}
