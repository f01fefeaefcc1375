package server

import (
	"bytes"
	"encoding/json"
	"strings"
)

// toolCall is one parsed call: arguments as a JSON object's text.
type toolCall struct {
	ID, Name, Arguments string
}

// toolDelta is a piece of the tool calls as they stream: the call's index,
// its id and name in the call's first delta (empty after), and text to
// append to its arguments.
type toolDelta struct {
	index    int
	id, name string
	args     string
}

// Tags of the Qwen XML tool-call grammar inside <tool_call>…</tool_call>.
const (
	fnOpen, fnClose       = "<function=", "</function>"
	paramOpen, paramClose = "<parameter=", "</parameter>"
)

// toolParser reads Qwen XML tool calls as they stream: <function=NAME>
// holding <parameter=KEY> elements whose values sit on their own lines up
// to </parameter>. A call's id and name are known once "<function=NAME>"
// is complete; its arguments are a JSON object of the parameters in the
// order they come, each appended as it arrives: a string value piece by
// piece (JSON-escaped, holding back only what could still be the
// "\n</parameter>" that ends it), a value the tool's schema types as
// integer, number, boolean, array, object or null whole at its
// </parameter> (JSON-parsed; its JSON string when that fails). A repeated
// key is repeated in the object (JSON parsers keep the last). A reply cut
// off inside a call closes the call's open string and object, so that the
// arguments stay JSON; a call cut off before its name is complete is
// dropped. Whole replies are parsed by the same machine (parseToolCalls),
// so a streamed call's deltas put together are the whole reply's call.
type toolParser struct {
	tools []toolSchema
	buf   string // text not yet consumed
	state int
	calls []toolCall // the calls begun so far
	// the parameter being read
	nArgs int    // parameters begun in the current call
	typ   string // the value's schema type
	raw   strings.Builder
	fresh bool // no character of the value has been read yet
}

// toolParser states.
const (
	tpOutside = iota // between calls: looking for <function=
	tpName           // reading NAME up to >
	tpParams         // inside a function: <parameter= or </function>
	tpKey            // reading KEY up to >
	tpValue          // reading a value up to </parameter>
)

func newToolParser(tools []toolSchema) *toolParser { return &toolParser{tools: tools} }

// push consumes more tool-call text and returns the deltas it completes.
func (p *toolParser) push(text string) []toolDelta {
	p.buf += text
	var out []toolDelta
	for {
		d, ok := p.step()
		if d.args != "" || d.name != "" {
			out = appendDelta(out, d)
		}
		if !ok {
			return out
		}
	}
}

// appendDelta adds d to out, merging argument text into the last delta of
// the same call.
func appendDelta(out []toolDelta, d toolDelta) []toolDelta {
	if n := len(out); n > 0 && out[n-1].index == d.index && d.name == "" {
		out[n-1].args += d.args
		return out
	}
	return append(out, d)
}

// step consumes one element of p.buf if it is complete; ok reports that
// it did (and another may follow).
func (p *toolParser) step() (d toolDelta, ok bool) {
	switch p.state {
	case tpOutside:
		i := strings.Index(p.buf, fnOpen)
		if i < 0 {
			p.buf = p.buf[len(p.buf)-partialSuffix(p.buf, fnOpen):] // the rest is <tool_call> and spacing
			return d, false
		}
		p.buf, p.state = p.buf[i+len(fnOpen):], tpName
		return d, true
	case tpName:
		j := strings.IndexByte(p.buf, '>')
		if j < 0 {
			return d, false
		}
		c := toolCall{ID: callID(), Name: strings.TrimSpace(p.buf[:j]), Arguments: "{"}
		p.calls = append(p.calls, c)
		p.buf, p.state, p.nArgs = p.buf[j+1:], tpParams, 0
		return toolDelta{index: len(p.calls) - 1, id: c.ID, name: c.Name, args: "{"}, true
	case tpParams:
		i, k := strings.Index(p.buf, fnClose), strings.Index(p.buf, paramOpen)
		switch {
		case i >= 0 && (k < 0 || i < k):
			p.buf, p.state = p.buf[i+len(fnClose):], tpOutside
			return p.args("}"), true
		case k >= 0:
			p.buf, p.state = p.buf[k+len(paramOpen):], tpKey
			return d, true
		}
		p.buf = p.buf[len(p.buf)-max(partialSuffix(p.buf, fnClose), partialSuffix(p.buf, paramOpen)):]
		return d, false
	case tpKey:
		j := strings.IndexByte(p.buf, '>')
		if j < 0 {
			return d, false
		}
		key := strings.TrimSpace(p.buf[:j])
		p.buf, p.state = p.buf[j+1:], tpValue
		p.typ = p.schemaType(key)
		p.raw.Reset()
		p.fresh = true
		head := `"` + jsonText(key) + `":`
		if p.nArgs > 0 {
			head = "," + head
		}
		p.nArgs++
		if !typed(p.typ) {
			head += `"`
		}
		return p.args(head), true
	default: // tpValue
		if p.fresh { // the newline after <parameter=KEY> is not part of the value
			if p.buf == "" {
				return d, false
			}
			p.buf = strings.TrimPrefix(p.buf, "\n")
			p.fresh = false
		}
		e := strings.Index(p.buf, "\n"+paramClose)
		end, skip := e, len("\n"+paramClose)
		if e < 0 {
			if e = strings.Index(p.buf, paramClose); e >= 0 {
				end, skip = e, len(paramClose)
			}
		}
		if end < 0 { // the value goes on: take all but what may start its end
			keep := partialSuffix(p.buf, "\n"+paramClose)
			piece := p.buf[:len(p.buf)-keep]
			p.buf = p.buf[len(piece):]
			if typed(p.typ) {
				p.raw.WriteString(piece)
				return d, false
			}
			return p.args(jsonText(piece)), false
		}
		piece := p.buf[:end]
		p.buf, p.state = p.buf[end+skip:], tpParams
		if typed(p.typ) {
			p.raw.WriteString(piece)
			return p.args(string(typedValue(p.raw.String(), p.typ))), true
		}
		return p.args(jsonText(piece) + `"`), true
	}
}

// finish ends the text: a call cut off inside a value or between
// parameters gets its value and object closed.
func (p *toolParser) finish() []toolDelta {
	var d toolDelta
	switch p.state {
	case tpParams, tpKey:
		d = p.args("}")
	case tpValue:
		tail := p.buf
		if p.fresh {
			tail = strings.TrimPrefix(tail, "\n")
		}
		if typed(p.typ) {
			p.raw.WriteString(tail)
			d = p.args(string(typedValue(p.raw.String(), p.typ)) + "}")
		} else {
			d = p.args(jsonText(tail) + `"}`)
		}
	}
	p.buf, p.state = "", tpOutside
	if d.args == "" {
		return nil
	}
	return []toolDelta{d}
}

// args appends text to the current call's arguments and returns its delta.
func (p *toolParser) args(text string) toolDelta {
	n := len(p.calls) - 1
	p.calls[n].Arguments += text
	return toolDelta{index: n, args: text}
}

// schemaType returns key's type in the current call's tool schema.
func (p *toolParser) schemaType(key string) string {
	name := p.calls[len(p.calls)-1].Name
	for _, t := range p.tools {
		if t.name == name {
			return t.types[key]
		}
	}
	return ""
}

// typed reports whether a schema type's values are JSON rather than text.
func typed(typ string) bool {
	switch typ {
	case "integer", "number", "boolean", "array", "object", "null":
		return true
	}
	return false
}

// jsonText is s JSON-escaped without its quotes (and without HTML
// escaping): the escapes of two pieces put together are the escape of the
// two put together.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := b.Bytes()
	return string(out[1 : len(out)-2]) // drop the quotes and Encode's newline
}

// parseToolCalls parses the tool calls of a whole reply's tool text (from
// its first "<tool_call>") with the streaming parser.
func parseToolCalls(text string, tools []toolSchema) []toolCall {
	p := newToolParser(tools)
	p.push(text)
	p.finish()
	return p.calls
}
