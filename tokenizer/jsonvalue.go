package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ardanlabs/jinja"
)

// jsonValue decodes one JSON document into a template value, keeping object keys in their
// order in the text (as Python's json.loads does, and as tojson must print them); a
// map[string]any would sort them. Integers stay integers and other numbers become floats, as
// in Python. A repeated key keeps its first position and its last value, as a Python dict.
func jsonValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				val, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				d.AsDict().Set(key.(string), val)
			}
			_, err := dec.Token() // '}'
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				item, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, item)
			}
			_, err := dec.Token() // ']'
			return jinja.NewList(items), err
		}
	case string:
		return jinja.NewString(v), nil
	case bool:
		return jinja.NewBool(v), nil
	case nil:
		return jinja.None(), nil
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := v.Int64(); err == nil {
				return jinja.NewInt(i), nil
			}
		}
		f, err := v.Float64()
		if err != nil {
			return jinja.Value{}, fmt.Errorf("number %s: %w", s, err)
		}
		return jinja.NewFloat(f), nil
	}
	return jinja.Value{}, fmt.Errorf("unexpected JSON token %v", tok)
}

// jsonTooDeep returns the byte offset of the first '[' or '{' in data that opens a level
// deeper than maxDepth, or -1 when none does or maxDepth < 0. It only reads the bytes (skipping
// strings, honouring escapes), so it bounds the work of decoding before decoding starts;
// malformed JSON is left to the decoder, which meets the same brackets up to its error.
func jsonTooDeep(data []byte, maxDepth int) int {
	if maxDepth < 0 {
		return -1
	}
	depth, inString := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > maxDepth {
				return i
			}
		case ']', '}':
			depth--
		}
	}
	return -1
}
