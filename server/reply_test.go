package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSplitter: streamed in pieces of every size, the deltas add up to
// the whole reply's parts, only ever append, and never hold part of a tag.
func TestSplitter(t *testing.T) {
	text := "\nLet me think: <b> is not a tag.\n</think>\n\nThe answer is 4.\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>"
	wantR, wantC, wantT := splitReply(text, true)
	if wantR != "Let me think: <b> is not a tag.\n" || wantC != "The answer is 4.\n" || !strings.HasPrefix(wantT, toolOpen) {
		t.Fatalf("splitReply: %q %q %q", wantR, wantC, wantT)
	}
	for size := 1; size <= len(text); size++ {
		s := newSplitter(true)
		var r, c strings.Builder
		for i := 0; i < len(text); i += size {
			dr, dc := s.push(text[i:min(i+size, len(text))])
			for _, d := range []string{dr, dc} {
				for _, tag := range []string{thinkEnd, toolOpen} {
					if strings.Contains(d, tag) || partialSuffix(d, tag) > 0 && d != "" && strings.HasSuffix(d, "<") {
						t.Fatalf("size %d: delta %q holds (part of) %s", size, d, tag)
					}
				}
			}
			r.WriteString(dr)
			c.WriteString(dc)
		}
		fr, fc, ft := s.finish()
		r.WriteString(fr)
		c.WriteString(fc)
		if r.String() != wantR || c.String() != wantC || ft != wantT {
			t.Fatalf("size %d: %q %q %q", size, r.String(), c.String(), ft)
		}
	}
	// Without thinking everything before a tool call is content.
	if r, c, _ := splitReply("plain </think> text", false); r != "" || c != "plain </think> text" {
		t.Fatalf("no thinking: %q %q", r, c)
	}
}

// TestParseToolCalls: the Qwen XML grammar, values typed by the schema
// (a bad typed value falls back to its string), several calls, and a call
// cut off before </function> dropped.
func TestParseToolCalls(t *testing.T) {
	tools, err := parseTools(json.RawMessage(`[{"type":"function","function":{"name":"edit","parameters":{"type":"object","properties":{
		"path":{"type":"string"},"line":{"type":"integer"},"force":{"type":"boolean"},"tags":{"type":"array"},"ratio":{"type":"number"}}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	text := "<tool_call>\n<function=edit>\n<parameter=path>\na/b.go\n</parameter>\n<parameter=line>\n42\n</parameter>\n" +
		"<parameter=force>\ntrue\n</parameter>\n<parameter=tags>\n[\"x\", 1]\n</parameter>\n<parameter=ratio>\nnot a number\n</parameter>\n" +
		"</function>\n</tool_call>\n<tool_call>\n<function=other>\n<parameter=text>\nline one\nline \"two\"\n</parameter>\n</function>\n</tool_call>" +
		"<tool_call>\n<function=edit>\n<parameter=path>\ncut"
	calls := parseToolCalls(text, tools)
	if len(calls) != 2 {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	if calls[0].Name != "edit" || calls[0].Arguments != `{"path":"a/b.go","line":42,"force":true,"tags":["x", 1],"ratio":"not a number"}` {
		t.Fatalf("call 0: %+v", calls[0])
	}
	if calls[1].Name != "other" || calls[1].Arguments != `{"text":"line one\nline \"two\""}` {
		t.Fatalf("call 1: %+v", calls[1])
	}
	for _, c := range calls {
		if !json.Valid([]byte(c.Arguments)) || len(c.ID) != len("call_")+12 || !strings.HasPrefix(c.ID, "call_") {
			t.Fatalf("call %+v: arguments not JSON or a bad id", c)
		}
	}
	if calls[0].ID == calls[1].ID {
		t.Fatal("two calls with one id")
	}
}
