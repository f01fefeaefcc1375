package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Tags of the Qwen chat format that split a reply (reference-pipeline.md
// §6.5): the thinking ends at thinkEnd; everything from toolOpen on is
// tool calls in the Qwen XML grammar.
const (
	thinkEnd  = "</think>"
	toolOpen  = "<tool_call>"
	toolClose = "</tool_call>"
)

// splitter divides a streamed reply into reasoning, content and tool-call
// text as it arrives. With thinking on (the prompt ends in "<think>\n")
// the reply is reasoning until "</think>", then content; from the first
// "<tool_call>" on, the text is held for the tool-call parser. A suffix
// that could still grow into a tag is held back, so no partial tag is
// ever emitted, and leading newlines of the first reasoning and content
// deltas are dropped. Deltas only ever append to what was emitted.
type splitter struct {
	thinking bool            // still in the reasoning part
	tools    strings.Builder // from "<tool_call>" on
	inTools  bool
	pending  string // held back: may start a tag
	started  [2]bool
}

func newSplitter(think bool) *splitter { return &splitter{thinking: think} }

// push takes the next piece of the reply's text and returns what may be
// emitted now.
func (s *splitter) push(text string) (reasoning, content string) {
	if s.inTools {
		s.tools.WriteString(text)
		return "", ""
	}
	t := s.pending + text
	s.pending = ""
	var r, c strings.Builder
	for t != "" {
		tag := toolOpen
		if s.thinking {
			tag = thinkEnd
		}
		if i := strings.Index(t, tag); i >= 0 {
			s.emit(&r, &c, t[:i])
			t = t[i+len(tag):]
			if s.thinking {
				s.thinking = false
				continue
			}
			s.inTools = true
			s.tools.WriteString(toolOpen + t)
			break
		}
		keep := partialSuffix(t, tag) // (in the reasoning only "</think>" counts)
		s.emit(&r, &c, t[:len(t)-keep])
		s.pending = t[len(t)-keep:]
		break
	}
	return r.String(), c.String()
}

// takeTools returns the tool-call text pushed since the last take.
func (s *splitter) takeTools() string {
	t := s.tools.String()
	s.tools.Reset()
	return t
}

// finish returns the held-back text and the tool-call text (from
// "<tool_call>" on, or from the last takeTools; empty if none).
func (s *splitter) finish() (reasoning, content, tools string) {
	var r, c strings.Builder
	s.emit(&r, &c, s.pending)
	s.pending = ""
	return r.String(), c.String(), s.tools.String()
}

// emit appends text to the reasoning or the content, dropping the leading
// newlines of each part's first delta.
func (s *splitter) emit(r, c *strings.Builder, text string) {
	part, b := 1, c
	if s.thinking {
		part, b = 0, r
	}
	if !s.started[part] {
		text = strings.TrimLeft(text, "\n")
		if text == "" {
			return
		}
		s.started[part] = true
	}
	b.WriteString(text)
}

// partialSuffix returns the length of the longest suffix of t that is a
// proper prefix of tag.
func partialSuffix(t, tag string) int {
	for n := min(len(t), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(t, tag[:n]) {
			return n
		}
	}
	return 0
}

// splitReply divides a whole reply as splitter does, so that a whole
// reply's parts are exactly its streamed deltas put together.
func splitReply(text string, think bool) (reasoning, content, tools string) {
	s := newSplitter(think)
	r, c := s.push(text)
	r2, c2, tools := s.finish()
	return r + r2, c + c2, tools
}

// toolSchema is what the parser needs of a tool: its name and the JSON
// schema type of each parameter.
type toolSchema struct {
	name  string
	types map[string]string
}

// parseTools reads the request's tools ([{type, function: {name,
// parameters: {properties: {KEY: {type}}}}}]).
func parseTools(raw json.RawMessage) ([]toolSchema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tools []struct {
		Function struct {
			Name       string `json:"name"`
			Parameters struct {
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
			} `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, err
	}
	out := make([]toolSchema, len(tools))
	for i, t := range tools {
		out[i] = toolSchema{name: t.Function.Name, types: map[string]string{}}
		for k, p := range t.Function.Parameters.Properties {
			if s, ok := p.Type.(string); ok {
				out[i].types[k] = s
			}
		}
	}
	return out, nil
}

// typedValue is a parameter's JSON value: parsed for the schema's typed
// kinds, a JSON string otherwise (and when parsing fails).
func typedValue(val, typ string) json.RawMessage {
	switch typ {
	case "integer", "number", "boolean", "array", "object", "null":
		if json.Valid([]byte(strings.TrimSpace(val))) {
			return json.RawMessage(strings.TrimSpace(val))
		}
	}
	s, _ := json.Marshal(val)
	return s
}

// callID is "call_" and 12 random hex digits.
func callID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
