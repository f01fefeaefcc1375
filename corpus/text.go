package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"forge/tokenizer"
)

// Separator is the line that ends a document in a .txt source, and the token placed between
// documents and between conversations in the token stream.
const Separator = "<|endoftext|>"

// textStream returns the token stream of a .txt file: its documents, each encoded with
// tok.Encode, joined by sep. A document is the run of complete lines (each keeping its line
// end) between two separator lines, a separator line being exactly Separator followed by "\n",
// "\r\n" or the end of the file. Empty documents (a separator at the start, two in a row, one at
// the end) are skipped, so sep only ever stands between two documents.
func textStream(data []byte, tok *tokenizer.Tokenizer, sep int) []int {
	stream := make([]int, 0, len(data)/3+1)
	emit := func(doc []byte) {
		if len(doc) == 0 {
			return
		}
		if len(stream) > 0 {
			stream = append(stream, sep)
		}
		stream = tok.EncodeAppend(stream, string(doc))
	}
	start := 0 // where the current document starts
	for pos := 0; pos < len(data); {
		end := len(data) // end of the line, without its "\n"
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		line := bytes.TrimSuffix(data[pos:end], []byte{'\r'})
		if string(line) == Separator {
			emit(data[start:pos])
			start = next
		}
		pos = next
	}
	emit(data[start:])
	return stream
}

// conversation is one line of a .jsonl chat source; other keys (such as "source") are ignored.
type conversation struct {
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

// chatStream returns the token stream of a .jsonl file: each non-blank line a conversation
// {"messages": [...], "tools"?: [...]}, rendered by tok.Chat with its tools, ParseArguments and
// no generation prompt, encoded with tok.Encode (special tokens such as <|im_start|> in the
// rendering become their ids), and the conversations joined by sep. Errors name the line.
func chatStream(path string, data []byte, tok *tokenizer.Tokenizer, sep int) ([]int, error) {
	var stream []int
	for n, pos := 1, 0; pos < len(data); n++ {
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		line := bytes.TrimSpace(data[pos:end])
		pos = end + 1
		if len(line) == 0 {
			continue
		}
		text, err := renderLine(line, tok)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		if len(stream) > 0 {
			stream = append(stream, sep)
		}
		stream = tok.EncodeAppend(stream, text)
	}
	return stream, nil
}

// renderLine checks one conversation line and renders it with the chat template.
func renderLine(line []byte, tok *tokenizer.Tokenizer) (string, error) {
	var c conversation
	if err := json.Unmarshal(line, &c); err != nil {
		return "", fmt.Errorf("not a JSON object with \"messages\": %v: %w", err, ErrFormat)
	}
	var msgs []map[string]json.RawMessage
	if isNull(c.Messages) {
		return "", fmt.Errorf("no \"messages\": %w", ErrFormat)
	}
	if err := json.Unmarshal(c.Messages, &msgs); err != nil {
		return "", fmt.Errorf("\"messages\" is not a list of objects: %v: %w", err, ErrFormat)
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("\"messages\" is empty: %w", ErrFormat)
	}
	for i, m := range msgs {
		var role string
		if err := json.Unmarshal(m["role"], &role); err != nil || role == "" {
			return "", fmt.Errorf("message %d: no \"role\" string: %w", i, ErrFormat)
		}
	}
	var tools json.RawMessage
	if !isNull(c.Tools) {
		var list []json.RawMessage
		if err := json.Unmarshal(c.Tools, &list); err != nil {
			return "", fmt.Errorf("\"tools\" is not a list: %v: %w", err, ErrFormat)
		}
		tools = c.Tools
	}
	text, err := tok.Chat(c.Messages, tokenizer.ChatOptions{Tools: tools, ParseArguments: true})
	if err != nil {
		if errors.Is(err, tokenizer.ErrNoTemplate) {
			return "", fmt.Errorf("render: %w", err)
		}
		return "", fmt.Errorf("render: %v: %w", err, ErrFormat)
	}
	return text, nil
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// jsonRows reads a .json source: an array of arrays of integer token ids. Errors give the
// line of the offending value.
func jsonRows(data []byte) ([][]int, error) {
	var rows [][]int
	err := json.Unmarshal(data, &rows)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return rows, nil
	case errors.As(err, &syn):
		return nil, fmt.Errorf("line %d: %v: %w", lineAt(data, syn.Offset), err, ErrFormat)
	case errors.As(err, &typ):
		return nil, fmt.Errorf("line %d: want an array of arrays of integer token ids: %v: %w",
			lineAt(data, typ.Offset), err, ErrFormat)
	default:
		return nil, fmt.Errorf("%v: %w", err, ErrFormat)
	}
}

// lineAt returns the 1-based line holding byte offset off of data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
