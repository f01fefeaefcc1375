package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// fileJSON is the part of tokenizer.json that forge reads. Polymorphic sections stay raw
// until their "type" is known.
type fileJSON struct {
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON       `json:"model"`
}

type modelJSON struct {
	Type                    string           `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

// component is the common head of normalizers, pre-tokenizers, post-processors and decoders.
type component struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Processors     []json.RawMessage `json:"processors"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        struct{ Regex, String *string }
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func parseComponent(raw json.RawMessage, what string) (*component, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &c, nil
}

func unsupported(what, typ string) error {
	return fmt.Errorf("%s type %q is not supported: %w", what, typ, ErrUnsupported)
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	c, err := parseComponent(raw, "normalizer")
	if c == nil || err != nil {
		return nil, err
	}
	switch c.Type {
	case "NFC":
		return unicodeForm{norm.NFC}, nil
	case "NFD":
		return unicodeForm{norm.NFD}, nil
	case "NFKC":
		return unicodeForm{norm.NFKC}, nil
	case "NFKD":
		return unicodeForm{norm.NFKD}, nil
	case "Sequence":
		var seq sequenceNormalizer
		for _, sub := range c.Normalizers {
			n, err := parseNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	}
	return nil, unsupported("normalizer", c.Type)
}

// parsePreTokenizer flattens the pre-tokenizer into steps. forge's BPE works on raw bytes, so
// the last step must be ByteLevel (the byte-alphabet mapping) and no other may follow it.
func parsePreTokenizer(raw json.RawMessage) ([]step, error) {
	steps, err := appendSteps(nil, raw)
	if err != nil {
		return nil, err
	}
	for i, s := range steps {
		if _, ok := s.(byteLevelStep); ok != (i == len(steps)-1) {
			return nil, fmt.Errorf("pre_tokenizer: a single ByteLevel step, last, is required: %w", ErrUnsupported)
		}
	}
	return steps, nil
}

func appendSteps(steps []step, raw json.RawMessage) ([]step, error) {
	c, err := parseComponent(raw, "pre_tokenizer")
	if c == nil || err != nil {
		return steps, err
	}
	switch c.Type {
	case "Sequence":
		for _, sub := range c.Pretokenizers {
			if steps, err = appendSteps(steps, sub); err != nil {
				return nil, err
			}
		}
		return steps, nil
	case "ByteLevel":
		useRegex := c.UseRegex == nil || *c.UseRegex // tokenizers' default is true
		return append(steps, byteLevelStep{addPrefixSpace: c.AddPrefixSpace, useRegex: useRegex}), nil
	case "Split":
		b, ok := behaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("pre_tokenizer Split behavior %q is not supported: %w", c.Behavior, ErrUnsupported)
		}
		var m matcher
		switch {
		case c.Pattern.Regex != nil:
			if m, err = newMatcher(*c.Pattern.Regex); err != nil {
				return nil, fmt.Errorf("pre_tokenizer: %w", err)
			}
		case c.Pattern.String != nil:
			m = literalMatcher{*c.Pattern.String}
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: no Regex or String pattern")
		}
		return append(steps, &splitStep{m: m, behavior: b, invert: c.Invert}), nil
	}
	return nil, unsupported("pre_tokenizer", c.Type)
}

// checkByteLevelOnly accepts a decoder or post-processor that is ByteLevel (or a Sequence of
// ByteLevel); for ids and text these change nothing beyond the byte mapping.
func checkByteLevelOnly(raw json.RawMessage, what string, nullOK bool) error {
	c, err := parseComponent(raw, what)
	if err != nil {
		return err
	}
	if c == nil {
		if nullOK {
			return nil
		}
		return fmt.Errorf("%s: none given, ByteLevel required: %w", what, ErrUnsupported)
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		subs := c.Decoders
		if what == "post_processor" {
			subs = c.Processors
		}
		for _, sub := range subs {
			if err := checkByteLevelOnly(sub, what, false); err != nil {
				return err
			}
		}
		return nil
	}
	return unsupported(what, c.Type)
}

// maxTokenID bounds ids so that a corrupt file cannot make the id tables huge.
const maxTokenID = 1<<24 - 1

// parseModel builds the BPE model and checks that its options are ones forge implements.
func parseModel(mj *modelJSON) (*bpe, error) {
	if mj.Type != "BPE" && !(mj.Type == "" && mj.Merges != nil) {
		return nil, unsupported("model", mj.Type)
	}
	switch {
	case mj.Dropout != nil && *mj.Dropout != 0:
		return nil, fmt.Errorf("model: BPE dropout %g is not supported: %w", *mj.Dropout, ErrUnsupported)
	case mj.ContinuingSubwordPrefix != nil && *mj.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("model: continuing_subword_prefix is not supported: %w", ErrUnsupported)
	case mj.EndOfWordSuffix != nil && *mj.EndOfWordSuffix != "":
		return nil, fmt.Errorf("model: end_of_word_suffix is not supported: %w", ErrUnsupported)
	}
	m := &bpe{
		vocab:        mj.Vocab,
		unk:          -1,
		fuseUnk:      mj.FuseUnk,
		byteFallback: mj.ByteFallback,
		ignoreMerges: mj.IgnoreMerges,
		cache:        make(map[string][]int32),
	}
	maxID := int32(-1)
	for tok, id := range m.vocab {
		if id < 0 || id > maxTokenID {
			return nil, fmt.Errorf("model: token %q: id %d out of range", tok, id)
		}
		maxID = max(maxID, id)
	}
	m.tokens = make([]string, maxID+1)
	for tok, id := range m.vocab {
		m.tokens[id] = tok
	}
	for b := range 256 {
		m.byteID[b], m.fallbackID[b] = -1, -1
		if id, ok := m.vocab[string(byteRunes[b])]; ok {
			m.byteID[b] = id
		}
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackID[b] = id
		}
	}
	if mj.UnkToken != nil {
		id, ok := m.vocab[*mj.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model: unk_token %q is not in the vocabulary", *mj.UnkToken)
		}
		m.unk = id
	}
	if err := m.parseMerges(mj.Merges); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return m, nil
}

// parseMerges reads merges as "a b" strings or ["a", "b"] pairs; a merge's rank is its index.
func (m *bpe) parseMerges(raw json.RawMessage) error {
	var pairs [][2]string
	var lines []string
	body := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimSpace(raw), []byte("[")), " \t\r\n")
	var err error
	if len(body) > 0 && body[0] == '[' {
		err = json.Unmarshal(raw, &pairs)
	} else {
		err = json.Unmarshal(raw, &lines)
	}
	if err != nil {
		return fmt.Errorf("merges are neither \"a b\" strings nor [a, b] pairs: %w", err)
	}
	n := max(len(lines), len(pairs))
	m.merges = make(map[uint64]uint64, n)
	m.byRank = make([]mergeRule, n)
	var buf []byte
	for rank := range n {
		var a, b string
		if lines != nil {
			var ok bool
			if a, b, ok = strings.Cut(lines[rank], " "); !ok {
				return fmt.Errorf("merge %d %q is not two tokens separated by a space", rank, lines[rank])
			}
		} else {
			a, b = pairs[rank][0], pairs[rank][1]
		}
		ia, oka := m.vocab[a]
		ib, okb := m.vocab[b]
		buf = append(append(buf[:0], a...), b...)
		ic, okc := m.vocab[string(buf)]
		if !oka || !okb || !okc {
			return fmt.Errorf("merge %d (%q, %q): token not in the vocabulary", rank, a, b)
		}
		key := pairKey(ia, ib)
		if v, ok := m.merges[key]; ok { // a repeated pair: the last rank wins, as in tokenizers
			m.byRank[v>>32].left = -1
		}
		m.merges[key] = uint64(rank)<<32 | uint64(uint32(ic))
		m.byRank[rank] = mergeRule{ia, ib, ic}
	}
	m.monotone = checkMonotone(m.byRank, len(m.tokens))
	return nil
}
