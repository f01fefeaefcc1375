package safetensors

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxHeaderLen is the largest header accepted, the reference implementation's
// limit (MAX_HEADER_SIZE in huggingface/safetensors).
const maxHeaderLen = 100_000_000

// metadataKey is the one top-level header key that is not a tensor.
const metadataKey = "__metadata__"

// headerParser walks a header that json.Valid has accepted, token by token,
// so that duplicate keys (which encoding/json's Unmarshal silently merges)
// are seen and rejected. It is a small scanner rather than json.Decoder's
// Token, which is several times slower on a header with thousands of
// tensors.
type headerParser struct {
	path    string
	b       []byte // the header
	i       int    // the next unread byte of b
	dataLen int64  // length of the data area, for span checks
}

// parseHeader parses and validates the JSON header of the file at path,
// whose data area holds dataLen bytes. It returns the tensors in header order
// and the metadata (nil when absent).
func parseHeader(path string, hdr []byte, dataLen int64) ([]TensorInfo, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, formatErr(path, "header is not valid UTF-8")
	}
	if !json.Valid(hdr) {
		var se *json.SyntaxError
		if err := json.Unmarshal(hdr, new(json.RawMessage)); errors.As(err, &se) {
			return nil, nil, formatErr(path, "header is not valid JSON: %v (at byte %d)", se, se.Offset)
		}
		return nil, nil, formatErr(path, "header is not valid JSON")
	}
	p := &headerParser{path: path, b: hdr, dataLen: dataLen}
	tok, err := p.token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, formatErr(path, "header is %s, not a JSON object", describe(tok))
	}
	var infos []TensorInfo
	var meta map[string]string
	seen := make(map[string]bool)
	for p.more() {
		key, err := p.key(seen, "", "header")
		if err != nil {
			return nil, nil, err
		}
		if key == metadataKey {
			meta, err = p.metadata()
		} else {
			var info TensorInfo
			info, err = p.entry(key)
			infos = append(infos, info)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if _, err := p.token(); err != nil { // the closing '}'
		return nil, nil, err
	}
	if err := checkOverlaps(path, infos); err != nil {
		return nil, nil, err
	}
	return infos, meta, nil
}

// skip moves past whitespace and the separators ',' and ':'. The header is
// valid JSON, so separators are where they belong and need no checking (as
// with json.Decoder.Token).
func (p *headerParser) skip() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r', ',', ':':
			p.i++
		default:
			return
		}
	}
}

// more reports whether the current object or array has another element.
func (p *headerParser) more() bool {
	p.skip()
	return p.i < len(p.b) && p.b[p.i] != '}' && p.b[p.i] != ']'
}

// token returns the next JSON token with json.Decoder.Token's types (Delim,
// string, json.Number, bool or nil). Bounds are checked although valid JSON
// cannot run out, so that no input can panic.
func (p *headerParser) token() (json.Token, error) {
	p.skip()
	if p.i >= len(p.b) {
		return nil, formatErr(p.path, "header JSON ends early")
	}
	start := p.i
	switch c := p.b[p.i]; c {
	case '{', '}', '[', ']':
		p.i++
		return json.Delim(c), nil
	case '"':
		return p.str()
	case 't', 'f', 'n':
		for p.i < len(p.b) && p.b[p.i] >= 'a' && p.b[p.i] <= 'z' {
			p.i++
		}
		switch string(p.b[start:p.i]) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, nil
	}
	for p.i < len(p.b) && strings.IndexByte("+-.0123456789eE", p.b[p.i]) >= 0 {
		p.i++
	}
	return json.Number(p.b[start:p.i]), nil
}

// str reads a string token starting at its opening quote. Strings with
// escapes are decoded by encoding/json.
func (p *headerParser) str() (string, error) {
	start, escaped := p.i, false
	for p.i++; p.i < len(p.b) && p.b[p.i] != '"'; p.i++ {
		if p.b[p.i] == '\\' {
			escaped = true
			p.i++
		}
	}
	if p.i >= len(p.b) {
		return "", formatErr(p.path, "header JSON ends early")
	}
	p.i++
	if !escaped {
		return string(p.b[start+1 : p.i-1]), nil
	}
	var s string
	if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
		return "", formatErr(p.path, "header string at byte %d: %v", start, err)
	}
	return s, nil
}

// key reads an object key and rejects it if seen before. tensor and where
// name the object for the error message.
func (p *headerParser) key(seen map[string]bool, tensor, where string) (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok { // the decoder only yields string keys; kept so no input can panic
		return "", formatErr(p.path, "%s has a non-string key", where)
	}
	if seen[key] {
		if where == "header" {
			return "", formatErr(p.path, "duplicate key %q in header", key)
		}
		return "", tensorErr(ErrFormat, p.path, tensor, "duplicate key %q in %s", key, where)
	}
	seen[key] = true
	return key, nil
}

// metadata reads the value of "__metadata__": null or an object of strings.
func (p *headerParser) metadata() (map[string]string, error) {
	tok, err := p.token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, formatErr(p.path, "%s is %s, not an object of strings", metadataKey, describe(tok))
	}
	meta := make(map[string]string)
	seen := make(map[string]bool)
	for p.more() {
		key, err := p.key(seen, "", metadataKey)
		if err != nil {
			return nil, err
		}
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		s, ok := tok.(string)
		if !ok {
			return nil, formatErr(p.path, "%s value of %q is %s, not a string", metadataKey, key, describe(tok))
		}
		meta[key] = s
	}
	_, err = p.token() // the closing '}'
	return meta, err
}

// entry reads and validates the header entry of one tensor.
func (p *headerParser) entry(name string) (TensorInfo, error) {
	info := TensorInfo{Name: name}
	tok, err := p.token()
	if err != nil {
		return info, err
	}
	if tok != json.Delim('{') {
		return info, tensorErr(ErrFormat, p.path, name, "entry is %s, not an object", describe(tok))
	}
	seen := make(map[string]bool)
	var offsets []int64
	for p.more() {
		key, err := p.key(seen, name, "its entry")
		if err != nil {
			return info, err
		}
		switch key {
		case "dtype":
			info.DType, err = p.dtype(name)
		case "shape":
			info.Shape, err = p.shape(name)
		case "data_offsets":
			offsets, err = p.intArray(name, key)
			if err == nil && len(offsets) != 2 {
				err = tensorErr(ErrFormat, p.path, name, "data_offsets has %d elements, want 2 [begin, end]", len(offsets))
			}
		default:
			err = tensorErr(ErrFormat, p.path, name, "unknown key %q (want dtype, shape, data_offsets)", key)
		}
		if err != nil {
			return info, err
		}
	}
	if _, err := p.token(); err != nil { // the closing '}'
		return info, err
	}
	for _, k := range []string{"dtype", "shape", "data_offsets"} {
		if !seen[k] {
			return info, tensorErr(ErrFormat, p.path, name, "missing key %q", k)
		}
	}
	info.Begin, info.End = offsets[0], offsets[1]
	return info, p.checkSpan(info)
}

// dtype reads a dtype name.
func (p *headerParser) dtype(name string) (DType, error) {
	tok, err := p.token()
	if err != nil {
		return 0, err
	}
	s, ok := tok.(string)
	if !ok {
		return 0, tensorErr(ErrFormat, p.path, name, "dtype is %s, not a string", describe(tok))
	}
	d, err := ParseDType(s)
	if err != nil {
		return 0, tensorErr(ErrFormat, p.path, name, "unknown dtype %q", s)
	}
	return d, nil
}

// shape reads a shape: an array of non-negative integers that fit an int.
func (p *headerParser) shape(name string) ([]int, error) {
	dims, err := p.intArray(name, "shape")
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d > math.MaxInt {
			return nil, tensorErr(ErrFormat, p.path, name, "shape dimension %d is too large", d)
		}
		shape[i] = int(d)
	}
	return shape, nil
}

// intArray reads an array of non-negative integers that fit an int64. field
// names the array for error messages.
func (p *headerParser) intArray(name, field string) ([]int64, error) {
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, tensorErr(ErrFormat, p.path, name, "%s is %s, not an array of integers", field, describe(tok))
	}
	vals := []int64{}
	for p.more() {
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, tensorErr(ErrFormat, p.path, name, "%s holds %s, not an integer", field, describe(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		switch {
		case err != nil && strings.ContainsAny(string(num), ".eE"):
			return nil, tensorErr(ErrFormat, p.path, name, "%s holds %s, not an integer", field, num)
		case err != nil:
			return nil, tensorErr(ErrFormat, p.path, name, "%s holds %s, out of range", field, num)
		case v < 0:
			return nil, tensorErr(ErrFormat, p.path, name, "%s holds negative value %d", field, v)
		}
		vals = append(vals, v)
	}
	_, err = p.token() // the closing ']'
	return vals, err
}

// checkSpan checks one tensor's byte span against its shape and the data area.
func (p *headerParser) checkSpan(t TensorInfo) error {
	size, err := checkedBytes(t.Shape, t.DType)
	if err != nil {
		return tensorErr(ErrFormat, p.path, t.Name, "%v", err)
	}
	switch {
	case t.Begin > t.End:
		return tensorErr(ErrFormat, p.path, t.Name, "data_offsets [%d %d] begin after end", t.Begin, t.End)
	case size != t.End-t.Begin:
		return tensorErr(ErrFormat, p.path, t.Name, "shape %v × %v = %d bytes but data_offsets span %d",
			t.Shape, t.DType, size, t.End-t.Begin)
	case t.End > p.dataLen:
		return tensorErr(ErrFormat, p.path, t.Name, "data_offsets [%d %d] pass the end of the %d-byte data area",
			t.Begin, t.End, p.dataLen)
	}
	return nil
}

// checkOverlaps rejects two tensors sharing a data byte. Empty spans own no
// bytes and never overlap; gaps between spans are allowed.
func checkOverlaps(path string, infos []TensorInfo) error {
	spans := make([]TensorInfo, 0, len(infos))
	for _, t := range infos {
		if t.End > t.Begin {
			spans = append(spans, t)
		}
	}
	slices.SortFunc(spans, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End), strings.Compare(a.Name, b.Name))
	})
	for i := 1; i < len(spans); i++ {
		prev, t := spans[i-1], spans[i]
		if t.Begin < prev.End {
			return formatErr(path, "tensors %q [%d, %d) and %q [%d, %d) overlap",
				prev.Name, prev.Begin, prev.End, t.Name, t.Begin, t.End)
		}
	}
	return nil
}

// describe names the kind of a JSON token for error messages.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return "the end of a container"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "an unknown token"
}
