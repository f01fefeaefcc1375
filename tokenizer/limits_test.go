package tokenizer

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// nestedMessages returns a conversation whose JSON nests levels deep: the list and the message
// are 2 levels, the content list the rest.
func nestedMessages(levels int) []byte {
	return []byte(`[{"role":"user","content":` + strings.Repeat("[", levels-2) + `"x"` + strings.Repeat("]", levels-2) + `}]`)
}

// TestChatLimits: Chat itself (what a server calls) refuses inputs over its bounds with
// ErrLimit and the bound's name, before decoding; the zero options mean the defaults, other
// values move the bounds and negative ones lift them.
func TestChatLimits(t *testing.T) {
	tok := loadTiny(t)
	deepArgs, _ := json.Marshal(strings.Repeat("[", 60) + strings.Repeat("]", 60))
	deepCall := []byte(`[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":` + string(deepArgs) + `}}]}]`)
	shallow := []byte(`[{"role":"user","content":"hi"}]`)
	cases := []struct {
		name string
		msgs []byte
		opts ChatOptions
		want string // "" for success
	}{
		{"64 levels", nestedMessages(64), ChatOptions{}, ""},
		{"65 levels", nestedMessages(65), ChatOptions{}, "messages nest deeper than 64 levels at byte offset 88 (ChatOptions.MaxDepth)"},
		{"100000 levels", nestedMessages(100_000), ChatOptions{}, "deeper than 64 levels"},
		{"MaxDepth 100", nestedMessages(100), ChatOptions{MaxDepth: 100}, ""},
		{"MaxDepth 10", nestedMessages(11), ChatOptions{MaxDepth: 10}, "deeper than 10 levels"},
		{"no MaxDepth", nestedMessages(1000), ChatOptions{MaxDepth: -1}, ""},
		{"brackets in strings", []byte(`[{"role":"user","content":"` + strings.Repeat(`[{\"`, 100) + `"}]`), ChatOptions{}, ""},
		{"deep tools", shallow, ChatOptions{Tools: json.RawMessage(strings.Repeat("[", 65) + strings.Repeat("]", 65))}, "tools nest deeper than 64 levels at byte offset 64"},
		{"deep kwargs", shallow, ChatOptions{Kwargs: json.RawMessage(`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`)}, "kwargs nest deeper than 64 levels at byte offset 68"},
		{"MaxBytes", shallow, ChatOptions{MaxBytes: 20}, "hold 32 bytes, over the limit of 20 (ChatOptions.MaxBytes)"},
		{"default MaxBytes", []byte(`[{"role":"user","content":"` + strings.Repeat("x", DefaultChatMaxBytes) + `"}]`), ChatOptions{}, "over the limit of 16777216"},
		{"no MaxBytes", shallow, ChatOptions{MaxBytes: -1}, ""},
		{"arguments unparsed", deepCall, ChatOptions{}, ""},
		{"arguments parsed", deepCall, ChatOptions{ParseArguments: true}, "message 0 tool call 0: arguments take the messages deeper than 64 levels at byte offset 59"},
	}
	for _, c := range cases {
		_, err := tok.Chat(c.msgs, c.opts)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want ErrLimit and %q", c.name, err, c.want)
		}
	}
}

// TestEncodeChecked: text that is not UTF-8 is refused, with the offset of the first bad
// sequence, by EncodeChecked and EncodeStream; valid text gives Encode's ids, which the stream
// hands over in batches of at most StreamBatch.
func TestEncodeChecked(t *testing.T) {
	tok := loadTiny(t)
	for _, c := range []struct{ text, want string }{
		{"ab\xffc", "byte offset 2 (ff)"},
		{"é\xc3", "byte offset 2 (c3)"},
		{"x\xe2\x82y", "byte offset 1 (e2 82)"},
		{"\xed\xa0\x80", "byte offset 0 (ed)"}, // a surrogate's encoding
	} {
		_, err := tok.EncodeChecked(c.text)
		err2 := tok.EncodeStream(c.text, func([]int) error { t.Fatal("ids of invalid UTF-8"); return nil })
		for _, e := range []error{err, err2} {
			if !errors.Is(e, ErrInvalidUTF8) || !strings.Contains(e.Error(), c.want) {
				t.Errorf("%q: %v, want ErrInvalidUTF8 and %q", c.text, e, c.want)
			}
		}
	}
	text := strings.Repeat("Hello, wörld! ", 2000) + "<|im_end|>" + strings.Repeat("z", 9000)
	want := tok.Encode(text)
	got, err := tok.EncodeChecked(text)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("EncodeChecked: %v, %d ids, want %d", err, len(got), len(want))
	}
	var streamed []int
	batches := 0
	stop := errors.New("stop")
	err = tok.EncodeStream(text, func(ids []int) error {
		if len(ids) > StreamBatch || len(ids) == 0 {
			t.Errorf("batch of %d ids", len(ids))
		}
		streamed = append(streamed, ids...)
		batches++
		return nil
	})
	if err != nil || !slices.Equal(streamed, want) || batches < 2 {
		t.Errorf("EncodeStream: %v, %d ids in %d batches, want %d", err, len(streamed), batches, len(want))
	}
	calls := 0
	if err := tok.EncodeStream(text, func([]int) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("EncodeStream did not stop at yield's error: %v after %d calls", err, calls)
	}
}
