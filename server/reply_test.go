package server

import (
	"encoding/json"
	"forge/generate"
	"net/http/httptest"
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
// (a bad typed value falls back to its string), several calls, a call cut
// off inside a value closed as JSON, one cut off before its name dropped;
// and fed in pieces of every size, the streamed deltas put together are
// the whole text's calls, each first delta carrying the id and name.
func TestParseToolCalls(t *testing.T) {
	tools, err := parseTools(json.RawMessage(`[{"type":"function","function":{"name":"edit","parameters":{"type":"object","properties":{
		"path":{"type":"string"},"line":{"type":"integer"},"force":{"type":"boolean"},"tags":{"type":"array"},"ratio":{"type":"number"}}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	text := "<tool_call>\n<function=edit>\n<parameter=path>\na/b.go\n</parameter>\n<parameter=line>\n42\n</parameter>\n" +
		"<parameter=force>\ntrue\n</parameter>\n<parameter=tags>\n[\"x\", 1]\n</parameter>\n<parameter=ratio>\nnot a number\n</parameter>\n" +
		"</function>\n</tool_call>\n<tool_call>\n<function=other>\n<parameter=text>\nline one\n<b>line</b> \"two\"\n</parameter>\n</function>\n</tool_call>" +
		"<tool_call>\n<function=edit>\n<parameter=path>\ncut\n</param"
	calls := parseToolCalls(text, tools)
	want := []toolCall{
		{Name: "edit", Arguments: `{"path":"a/b.go","line":42,"force":true,"tags":["x", 1],"ratio":"not a number"}`},
		{Name: "other", Arguments: `{"text":"line one\n<b>line</b> \"two\""}`},
		{Name: "edit", Arguments: `{"path":"cut\n</param"}`},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	for i, c := range calls {
		if c.Name != want[i].Name || c.Arguments != want[i].Arguments {
			t.Errorf("call %d: %+v, want %+v", i, c, want[i])
		}
		if !json.Valid([]byte(c.Arguments)) || len(c.ID) != len("call_")+12 || !strings.HasPrefix(c.ID, "call_") {
			t.Errorf("call %+v: arguments not JSON or a bad id", c)
		}
	}
	if calls[0].ID == calls[1].ID {
		t.Fatal("two calls with one id")
	}
	if c := parseToolCalls("<tool_call>\n<function=ed", tools); len(c) != 0 {
		t.Fatalf("a call cut off in its name: %+v", c)
	}
	for size := 1; size <= len(text); size++ {
		p := newToolParser(tools)
		var ds []toolDelta
		for i := 0; i < len(text); i += size {
			ds = append(ds, p.push(text[i:min(i+size, len(text))])...)
		}
		ds = append(ds, p.finish()...)
		got := make([]toolCall, 0, len(want))
		for _, d := range ds {
			if d.index == len(got) {
				if d.id == "" || d.name == "" {
					t.Fatalf("size %d: call %d's first delta has no id or name", size, d.index)
				}
				got = append(got, toolCall{Name: d.name})
			} else if d.id != "" || d.index != len(got)-1 {
				t.Fatalf("size %d: delta %+v out of order", size, d)
			}
			got[d.index].Arguments += d.args
		}
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Fatalf("size %d: streamed %+v, want %+v", size, got, want)
			}
		}
	}
}

// TestStreamToolCalls: a streamed reply with a tool call sends the call's
// id, type and name first, then argument deltas that put together are the
// whole reply's arguments, and finishes with "tool_calls"; the content
// before the call is streamed as content.
func TestStreamToolCalls(t *testing.T) {
	tools, _ := parseTools(json.RawMessage(`[{"type":"function","function":{"name":"get","parameters":{"properties":{"n":{"type":"integer"}}}}}]`))
	text := "Let me look.\n<tool_call>\n<function=get>\n<parameter=city>\nParis, \"FR\"\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>"
	rec := httptest.NewRecorder()
	st := &streamer{w: rec, id: "x", obj: "chat.completion.chunk", chat: true, split: newSplitter(false), calls: newToolParser(tools)}
	st.begin()
	for i := 0; i < len(text); i += 5 {
		if err := st.text(text[i:min(i+5, len(text))]); err != nil {
			t.Fatal(err)
		}
	}
	st.end(reply{chat: true, tools: tools}, generate.Result{Finish: generate.FinishStop}, nil)
	var content, args, id, name, finish string
	deltas := 0
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				Finish *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		c := ch.Choices[0]
		content += c.Delta.Content
		for _, tc := range c.Delta.ToolCalls {
			if deltas++; deltas == 1 && (tc.ID == "" || tc.Type != "function" || tc.Function.Name != "get") || deltas > 1 && tc.ID != "" || tc.Index != 0 {
				t.Fatalf("tool-call delta %d: %+v", deltas, tc)
			}
			id, name = id+tc.ID, name+tc.Function.Name
			args += tc.Function.Arguments
		}
		if c.Finish != nil {
			finish = *c.Finish
		}
	}
	want := parseToolCalls(text[strings.Index(text, "<tool_call>"):], tools)[0]
	if content != "Let me look.\n" || args != want.Arguments || name != "get" || finish != "tool_calls" || deltas < 3 {
		t.Fatalf("content %q, call %s %s(%s) in %d deltas, finish %q; whole: %s", content, id, name, args, deltas, finish, want.Arguments)
	}
}
