package bundle

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"forge/internal/durable"
)

// Annotate records value (any JSON value) under key in the manifest's
// quantization recipe of the bundle in dir (forge quantize --budget adds
// its gate's verdict after evaluating the bundle it wrote), refreshing
// content_sha256 and replacing forge.json atomically. The tensor files
// and their hashes are untouched; the manifest must be intact (its
// content hash checks) and the key not already set.
func Annotate(dir, key string, value any) error {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	if m.ContentSHA256 != "" {
		if sum, err := m.ContentHash(); err != nil || sum != m.ContentSHA256 {
			return fmt.Errorf("bundle %s: %s: its content does not match its content_sha256 (edited?); not annotated", dir, ManifestName)
		}
	}
	if _, ok := m.Quant.Recipe[key]; ok {
		return fmt.Errorf("bundle %s: %s: the recipe already records %q", dir, ManifestName, key)
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("bundle %s: annotation %q: %w", dir, key, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if m.Quant.Recipe == nil {
		m.Quant.Recipe = map[string]any{}
	}
	m.Quant.Recipe[key] = v
	if m.FormatVersion >= 2 {
		if m.ContentSHA256, err = m.ContentHash(); err != nil {
			return err
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, ManifestName), append(out, '\n'))
}
