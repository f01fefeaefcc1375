package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ReadTokenLists reads a JSON list of token ids or a list of such lists
// (forge logits' input).
// nested reports which; every sequence must be non-empty.
func ReadTokenLists(path string) (seqs [][]int, nested bool, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	raw = bytes.TrimSpace(raw)
	var flat []int
	if err := json.Unmarshal(raw, &flat); err == nil {
		seqs = [][]int{flat}
	} else if err2 := json.Unmarshal(raw, &seqs); err2 == nil {
		nested = true
	} else {
		return nil, false, fmt.Errorf("%s: want a JSON list of token ids or a list of such lists: %w", path, err)
	}
	if len(seqs) == 0 {
		return nil, false, fmt.Errorf("%s: no sequences", path)
	}
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, false, fmt.Errorf("%s: sequence %d is empty", path, i)
		}
	}
	return seqs, nested, nil
}
