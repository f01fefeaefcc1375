package tinylut

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"forge/checkpoint"
)

// SynthLike writes to dir a random checkpoint (checkpoint.Synth, seed)
// with the config of the checkpoint in base, its text_config's fields
// replaced by text: a model of a real checkpoint's layout and vocabulary
// in the shape a test needs.
func SynthLike(base, dir string, text map[string]any, seed uint64) error {
	data, err := os.ReadFile(filepath.Join(base, "config.json"))
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	tc, ok := cfg["text_config"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: config.json has no text_config object", base)
	}
	for k, v := range text {
		tc[k] = v
	}
	if data, err = json.Marshal(cfg); err != nil {
		return err
	}
	return checkpoint.Synth(context.Background(), data, dir, checkpoint.SynthOptions{Seed: seed})
}
