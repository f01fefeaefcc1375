package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

var (
	// ErrUnsupported marks a tokenizer.json feature forge does not implement.
	ErrUnsupported = errors.New("unsupported tokenizer feature")
	// ErrUnknownID marks a token id outside the vocabulary.
	ErrUnknownID = errors.New("token id not in the vocabulary")
	// ErrNoTemplate marks a tokenizer without (the requested) chat template.
	ErrNoTemplate = errors.New("no chat template")
)

// Tokenizer turns text into token ids and back exactly as Hugging Face tokenizers does for a
// byte-level BPE tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	model      *bpe
	normalizer normalizer    // nil: none
	raw        *addedMatcher // added tokens matched in the raw text, or nil
	normalized *addedMatcher // added tokens matched after normalization, or nil
	steps      []step        // pre-tokenizer; the last is ByteLevel
	fast       tiling        // the whole pre-tokenizer when it is Split(pattern, Isolated) + plain ByteLevel

	added     map[string]int // added token content → id
	addedByID map[int]string // id → added token content
	special   map[int]bool   // ids of special added tokens
	vocabSize int

	decoded    []byte   // decoded bytes of every id, back to back
	decodedOff []uint32 // id → end offset in decoded; [id] == [id-1] and !known[id] for holes
	known      []bool

	specials specialTokens // bos/eos/pad from tokenizer_config.json and generation_config.json
	chat     chatTemplates
}

// Parse reads a tokenizer.json. Features other than a byte-level BPE with the normalizers,
// pre-tokenizers and decoders described in the package documentation are refused with an
// error wrapping ErrUnsupported that names them.
func Parse(tokenizerJSON []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, err
	}
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("truncation is not supported: %w", ErrUnsupported)
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("padding is not supported: %w", ErrUnsupported)
	}
	t := &Tokenizer{
		added:     make(map[string]int),
		addedByID: make(map[int]string),
		special:   make(map[int]bool),
		specials:  specialTokens{bos: -1, pad: -1, vars: map[string]string{}},
	}
	var err error
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.steps, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err = checkByteLevelOnly(f.PostProcessor, "post_processor", true); err != nil {
		return nil, err
	}
	if err = checkByteLevelOnly(f.Decoder, "decoder", false); err != nil {
		return nil, err
	}
	if t.model, err = parseModel(&f.Model); err != nil {
		return nil, err
	}
	t.fast = fastPath(t.steps)
	if err = t.setAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	t.buildDecodeTable()
	return t, nil
}

// fastPath returns the tiling pattern when the pre-tokenizer is Split(tiling, Isolated) then a
// ByteLevel that neither adds a prefix space nor splits, the Qwen layout.
func fastPath(steps []step) tiling {
	if len(steps) != 2 {
		return nil
	}
	sp, ok := steps[0].(*splitStep)
	bl := steps[1].(byteLevelStep)
	if !ok || sp.behavior != isolated || sp.invert || bl.addPrefixSpace || bl.useRegex {
		return nil
	}
	if tm, ok := sp.m.(tilingMatcher); ok {
		return tm.t
	}
	return nil
}

func (t *Tokenizer) setAdded(tokens []addedToken) error {
	var raw, norm []*addedToken
	var rawC, normC []string
	t.vocabSize = len(t.model.tokens)
	for i := range tokens {
		a := &tokens[i]
		if a.Content == "" {
			continue // tokenizers ignores added tokens without content
		}
		if a.ID < 0 || a.ID > maxTokenID {
			return fmt.Errorf("added token %q: id %d out of range", a.Content, a.ID)
		}
		t.vocabSize = max(t.vocabSize, a.ID+1)
		t.added[a.Content] = a.ID
		t.addedByID[a.ID] = a.Content
		if a.Special {
			t.special[a.ID] = true
		}
		switch {
		case a.Normalized:
			c := a.Content
			if t.normalizer != nil {
				c = t.normalizer.normalize(c)
			}
			norm, normC = append(norm, a), append(normC, c)
		default:
			raw, rawC = append(raw, a), append(rawC, a.Content)
		}
	}
	if len(raw) > 0 {
		t.raw = newAddedMatcher(raw, rawC)
	}
	if len(norm) > 0 {
		t.normalized = newAddedMatcher(norm, normC)
	}
	return nil
}

// tokenString returns the token of id: the added token's content, else the model's token.
func (t *Tokenizer) tokenString(id int) (string, bool) {
	if c, ok := t.addedByID[id]; ok {
		return c, true
	}
	if id >= 0 && id < len(t.model.tokens) && t.model.tokens[id] != "" {
		return t.model.tokens[id], true
	}
	return "", false
}

func (t *Tokenizer) buildDecodeTable() {
	t.decodedOff = make([]uint32, t.vocabSize)
	t.known = make([]bool, t.vocabSize)
	for id := range t.vocabSize {
		if tok, ok := t.tokenString(id); ok {
			t.decoded = byteLevelDecode(t.decoded, tok)
			t.known[id] = true
		}
		t.decodedOff[id] = uint32(len(t.decoded))
	}
}

// VocabSize is one more than the largest token id (model vocabulary and added tokens).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token given as written in tokenizer.json (added token content,
// or a vocabulary entry in the byte alphabet, e.g. "Ġthe").
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.added[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return int(id), ok
}

// Token returns the token string of id, as written in tokenizer.json.
func (t *Tokenizer) Token(id int) (string, bool) {
	return t.tokenString(id)
}

// IsSpecial reports whether id is a special added token (such as <|im_end|>).
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// Encode returns the ids of text, as Hugging Face's encode(text) (the ByteLevel
// post-processor adds no tokens). Added tokens, special or not, are recognized in the text.
// Bytes that are not UTF-8 are encoded as themselves, through the byte alphabet; text from
// outside goes through EncodeChecked or EncodeStream, which refuse them as tokenizers' str
// argument cannot hold them.
func (t *Tokenizer) Encode(text string) []int {
	return t.EncodeAppend(make([]int, 0, len(text)/3+1), text)
}

// EncodeAppend appends the ids of text to dst.
func (t *Tokenizer) EncodeAppend(dst []int, text string) []int {
	s := sink{ids: dst}
	t.encode(&s, text)
	return s.ids
}

// EncodeChecked is Encode for text that must be valid UTF-8, as the str that tokenizers takes
// is: other text gets an error wrapping ErrInvalidUTF8 that names the byte offset of its first
// ill-formed sequence.
func (t *Tokenizer) EncodeChecked(text string) ([]int, error) {
	if err := CheckUTF8(text); err != nil {
		return nil, err
	}
	return t.Encode(text), nil
}

// EncodeStream is EncodeChecked handing the ids to yield in order, in batches of at most
// StreamBatch ids that yield may not keep, so that memory does not grow with their number. It
// returns the first error of yield, which ends the encoding.
func (t *Tokenizer) EncodeStream(text string, yield func(ids []int) error) error {
	if err := CheckUTF8(text); err != nil {
		return err
	}
	s := sink{ids: make([]int, 0, StreamBatch), flush: yield}
	t.encode(&s, text)
	if s.err == nil && len(s.ids) > 0 {
		s.err = yield(s.ids)
	}
	return s.err
}

// StreamBatch is the most ids EncodeStream hands over at once.
const StreamBatch = 4096

// ErrInvalidUTF8 marks text that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("text is not valid UTF-8")

// CheckUTF8 returns nil for valid UTF-8, else an error wrapping ErrInvalidUTF8 that names the
// byte offset of the first ill-formed sequence and its bytes.
func CheckUTF8(text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && w == 1 {
			n, _, _ := utf8Seq([]byte(text[i:min(i+4, len(text))]))
			return fmt.Errorf("byte offset %d (% x): %w", i, text[i:i+n], ErrInvalidUTF8)
		}
		i += w
	}
	return nil // unreachable: ValidString was false
}

// sink receives the ids of an encoding in order: it keeps them all, or, with flush, hands
// them over whenever StreamBatch have gathered.
type sink struct {
	ids   []int
	flush func([]int) error
	err   error // flush's first error; the encoding stops
}

func (s *sink) add(ids []int32) {
	for len(ids) > 0 && s.err == nil {
		n := len(ids)
		if s.flush != nil {
			n = min(n, StreamBatch-len(s.ids))
		}
		for _, id := range ids[:n] {
			s.ids = append(s.ids, int(id))
		}
		ids = ids[n:]
		if s.flush != nil && len(s.ids) >= StreamBatch {
			s.err = s.flush(s.ids)
			s.ids = s.ids[:0]
		}
	}
}

func (s *sink) one(id int) {
	var one = [1]int32{int32(id)}
	s.add(one[:])
}

// encode runs the pipeline: added tokens matched in the raw text, then the rest normalized.
func (t *Tokenizer) encode(s *sink, text string) {
	if t.raw == nil {
		t.encodeNormalized(s, text)
		return
	}
	t.raw.each(text, func(p piece) bool {
		if p.id >= 0 {
			s.one(p.id)
		} else {
			t.encodeNormalized(s, text[p.start:p.end])
		}
		return s.err == nil
	})
}

// encodeNormalized normalizes text that holds no raw-matched added token, then extracts the
// normalized added tokens, pre-tokenizes and runs the model.
func (t *Tokenizer) encodeNormalized(s *sink, text string) {
	if t.normalizer != nil {
		text = t.normalizer.normalize(text)
	}
	if t.normalized == nil {
		t.encodeText(s, text)
		return
	}
	t.normalized.each(text, func(p piece) bool {
		if p.id >= 0 {
			s.one(p.id)
		} else {
			t.encodeText(s, text[p.start:p.end])
		}
		return s.err == nil
	})
}

// encodeText pre-tokenizes normalized text and encodes each word.
func (t *Tokenizer) encodeText(s *sink, text string) {
	var buf [64]int32
	if t.fast == nil {
		t.encodeSteps(s, text, buf[:])
		return
	}
	for i := 0; i < len(text) && s.err == nil; {
		j := t.fast.next(text, i)
		s.add(t.model.word(buf[:0], text[i:j]))
		i = j
	}
}

// encodeSteps runs the pre-tokenizer steps in turn on every piece, then the model.
func (t *Tokenizer) encodeSteps(s *sink, text string, buf []int32) {
	var walk func(p string, k int)
	walk = func(p string, k int) {
		if s.err != nil {
			return
		}
		if k == len(t.steps) {
			if p != "" {
				s.add(t.model.word(buf[:0], p))
			}
			return
		}
		t.steps[k].split(p, func(q string) { walk(q, k+1) })
	}
	if text != "" {
		walk(text, 0)
	}
}

// tokenBytes returns the bytes that id decodes to.
func (t *Tokenizer) tokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= t.vocabSize || !t.known[id] {
		return nil, false
	}
	start := uint32(0)
	if id > 0 {
		start = t.decodedOff[id-1]
	}
	return t.decoded[start:t.decodedOff[id]], true
}

// TokenBytes returns a copy of the bytes id decodes to, which need not be
// valid UTF-8 alone (a piece of a multi-byte character); nil for an id
// outside the vocabulary.
func (t *Tokenizer) TokenBytes(id int) []byte {
	b, _ := t.tokenBytes(id)
	return slices.Clone(b)
}

// Decode returns the text of ids, special tokens included, as Hugging Face's
// decode(ids, skip_special_tokens=False): the ByteLevel decoder's bytes, with each ill-formed
// UTF-8 sequence replaced by U+FFFD. An id outside the vocabulary is an error (ErrUnknownID).
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var buf []byte
	for _, id := range ids {
		b, ok := t.tokenBytes(id)
		if !ok {
			return "", fmt.Errorf("decode: id %d: %w", id, ErrUnknownID)
		}
		buf = append(buf, b...)
	}
	if utf8.Valid(buf) {
		return string(buf), nil
	}
	return string(appendLossy(nil, buf)), nil
}
