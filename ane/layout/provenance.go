package layout

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"forge/internal/durable"
)

// ProvenanceName is the side file forge export writes beside the layout's
// files (the reference's readers look only at *.safetensors).
const ProvenanceName = "forge-export.json"

// Provenance is forge-export.json: where an export came from, so that
// forge import finds the checkpoint holding what the layout does not
// (embeddings, norms, conv taps, A_log, dt_bias, in_proj_a/b, raw
// matrices) and can tell a different one.
type Provenance struct {
	Layout       string `json:"layout"` // "reference"
	ForgeVersion string `json:"forge_version"`
	// Bundle is the exported bundle: its path and its manifest's content hash.
	Bundle struct {
		Path          string `json:"path"`
		ContentSHA256 string `json:"content_sha256"`
	} `json:"bundle"`
	// Base is the checkpoint the bundle was quantized from (its manifest's
	// source): path and checkpoint.Fingerprint.
	Base struct {
		Path        string `json:"path"`
		Fingerprint string `json:"fingerprint"`
	} `json:"base"`
	// SignRNG names the generator of the online rotations' signs
	// (SignRNGForge or SignRNGNumpy), or "per-layer" when the layer files
	// name different ones (each file's sign_rng is what import reads).
	SignRNG string `json:"sign_rng"`
}

// ReadProvenance reads dir's forge-export.json; ok is false when there is
// none (a directory the reference wrote, or one built by hand).
func ReadProvenance(dir string) (p Provenance, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, ProvenanceName))
	if errors.Is(err, fs.ErrNotExist) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, false, fmt.Errorf("layout %s: %s: %w", dir, ProvenanceName, err)
	}
	return p, true, nil
}

// WriteProvenance writes dir's forge-export.json atomically.
func WriteProvenance(dir string, p Provenance) error {
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, ProvenanceName), append(raw, '\n'))
}
