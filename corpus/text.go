package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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

// Conversation is one line of a .jsonl chat source, checked: {"messages": [...], "tools"?:
// [...]} with at least one message, every message an object with a "role" string, and
// "tools", when present and not null, a list. Other keys of the line (such as "source") are
// ignored.
type Conversation struct {
	Line     int             // 1-based line of the file
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"` // nil when absent or null
}

// ReadConversations reads a .jsonl chat file as Load does (one conversation per non-blank
// line, checked as Conversation documents) and returns its conversations in file order and
// the hex SHA-256 of its bytes. Errors name the file and the line and wrap ErrFormat (or
// ErrTooFewRows for a file without conversations).
func ReadConversations(path string) ([]Conversation, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	convs, err := parseConversations(path, data)
	if err != nil {
		return nil, "", err
	}
	if len(convs) == 0 {
		return nil, "", fmt.Errorf("%s: no conversations: %w", path, ErrTooFewRows)
	}
	sum := sha256.Sum256(data)
	return convs, hex.EncodeToString(sum[:]), nil
}

// parseConversations parses every non-blank line of a .jsonl file. Errors name the line.
func parseConversations(path string, data []byte) ([]Conversation, error) {
	var out []Conversation
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
		c, err := parseConversation(line)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		c.Line = n
		out = append(out, c)
	}
	return out, nil
}

// chatStream returns the token stream of a .jsonl file: each non-blank line a conversation
// {"messages": [...], "tools"?: [...]}, rendered by tok.Chat with its tools, ParseArguments and
// no generation prompt, encoded with tok.Encode (special tokens such as <|im_start|> in the
// rendering become their ids), and the conversations joined by sep. Errors name the line.
func chatStream(path string, data []byte, tok *tokenizer.Tokenizer, sep int) ([]int, error) {
	convs, err := parseConversations(path, data)
	if err != nil {
		return nil, err
	}
	var stream []int
	for _, c := range convs {
		text, err := tok.Chat(c.Messages, tokenizer.ChatOptions{Tools: c.Tools, ParseArguments: true})
		if err != nil {
			if errors.Is(err, tokenizer.ErrNoTemplate) {
				return nil, fmt.Errorf("%s: line %d: render: %w", path, c.Line, err)
			}
			return nil, fmt.Errorf("%s: line %d: render: %v: %w", path, c.Line, err, ErrFormat)
		}
		if len(stream) > 0 {
			stream = append(stream, sep)
		}
		stream = tok.EncodeAppend(stream, text)
	}
	return stream, nil
}

// parseConversation checks one conversation line.
func parseConversation(line []byte) (Conversation, error) {
	var c Conversation
	if err := json.Unmarshal(line, &c); err != nil {
		return c, fmt.Errorf("not a JSON object with \"messages\": %v: %w", err, ErrFormat)
	}
	var msgs []map[string]json.RawMessage
	if isNull(c.Messages) {
		return c, fmt.Errorf("no \"messages\": %w", ErrFormat)
	}
	if err := json.Unmarshal(c.Messages, &msgs); err != nil {
		return c, fmt.Errorf("\"messages\" is not a list of objects: %v: %w", err, ErrFormat)
	}
	if len(msgs) == 0 {
		return c, fmt.Errorf("\"messages\" is empty: %w", ErrFormat)
	}
	for i, m := range msgs {
		var role string
		if err := json.Unmarshal(m["role"], &role); err != nil || role == "" {
			return c, fmt.Errorf("message %d: no \"role\" string: %w", i, ErrFormat)
		}
	}
	if isNull(c.Tools) {
		c.Tools = nil
	} else {
		var list []json.RawMessage
		if err := json.Unmarshal(c.Tools, &list); err != nil {
			return c, fmt.Errorf("\"tools\" is not a list: %v: %w", err, ErrFormat)
		}
	}
	return c, nil
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
