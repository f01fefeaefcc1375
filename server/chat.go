package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"forge/generate"
	"forge/sample"
)

// genRequest holds the fields chat and completion requests share
// (reference-pipeline.md §6.3).
type genRequest struct {
	Model               string          `json:"model"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	DRYMultiplier       *float64        `json:"dry_multiplier"`
	Seed                *uint64         `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ThinkingBudget *int `json:"thinking_budget"`
}

// chatRequest is a POST /v1/chat/completions body.
type chatRequest struct {
	genRequest
	logprobFields
	Messages        []map[string]any `json:"messages"`
	Tools           json.RawMessage  `json:"tools"`
	ToolChoice      json.RawMessage  `json:"tool_choice"`
	Kwargs          map[string]any   `json:"chat_template_kwargs"`
	ReasoningEffort string           `json:"reasoning_effort"`
}

// completionRequest is a POST /v1/completions body.
type completionRequest struct {
	genRequest
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"` // candidates per token (legacy API)
}

// options maps the sampling fields onto the reference's defaults for
// thinking on or off. top_k 0 turns top-k off (the reference maps it to 20).
func (g *genRequest) options(think bool) (sample.Options, error) {
	o := generate.DefaultSampling(think)
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&o.Temperature, g.Temperature)
	set(&o.TopP, g.TopP)
	set(&o.MinP, g.MinP)
	set(&o.Presence, g.PresencePenalty)
	if g.TopK != nil {
		o.TopK = *g.TopK
	}
	if g.DRYMultiplier != nil {
		o.DRY = sample.DRY{Multiplier: *g.DRYMultiplier, Base: sample.DefaultDRYBase, Allowed: sample.DefaultDRYAllowed}
	}
	if g.Seed != nil {
		o.Seed = *g.Seed
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		for _, c := range b {
			o.Seed = o.Seed<<8 | uint64(c)
		}
	}
	if err := o.Validate(); err != nil {
		return o, badRequest("invalid_value", "%v", err)
	}
	return o, nil
}

// stops reads stop: a string or a list of strings.
func (g *genRequest) stops() ([]string, error) {
	if len(g.Stop) == 0 || string(g.Stop) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(g.Stop, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(g.Stop, &list); err != nil {
		return nil, badRequest("invalid_value", "stop: want a string or a list of strings")
	}
	if len(list) > maxStops {
		return nil, badRequest("invalid_value", "stop: %d strings, at most %d", len(list), maxStops)
	}
	for _, s := range list {
		if s == "" {
			return nil, badRequest("invalid_value", "stop: an empty string")
		}
	}
	return list, nil
}

// request builds the engine request for prompt: max_tokens (default the
// server's, capped by the room left in the context), stops, sampling.
func (s *Server) request(g *genRequest, prompt []int, think bool) (generate.Request, error) {
	ctxCap := s.m.Config().MaxContext
	if s.opt.MaxPrompt > 0 && len(prompt) > s.opt.MaxPrompt {
		return generate.Request{}, badRequest("prompt_too_long",
			"the prompt has %d tokens; this server takes at most %d", len(prompt), s.opt.MaxPrompt)
	}
	if ctxCap > 0 && len(prompt) >= ctxCap {
		return generate.Request{}, badRequest("context_length_exceeded",
			"the prompt has %d tokens; the context holds %d, and a reply needs at least one more", len(prompt), ctxCap)
	}
	n := s.opt.MaxTokens
	for _, v := range []*int{g.MaxTokens, g.MaxCompletionTokens} {
		if v != nil {
			if *v <= 0 {
				return generate.Request{}, badRequest("invalid_value", "max_tokens %d: want a positive number", *v)
			}
			n = *v
		}
	}
	if ctxCap > 0 {
		n = min(n, ctxCap-len(prompt))
	}
	stops, err := g.stops()
	if err != nil {
		return generate.Request{}, err
	}
	o, err := g.options(think)
	if err != nil {
		return generate.Request{}, err
	}
	req := generate.Request{Prompt: prompt, Sample: o, MaxTokens: n, Stop: stops}
	if think {
		b := 0
		if g.ThinkingBudget != nil {
			b = *g.ThinkingBudget
		}
		if b >= 0 {
			req.ThinkBudget = generate.ThinkBudget(b, n)
		}
	}
	return req, nil
}

// messages normalizes the OpenAI messages for the chat template
// (reference-pipeline.md §6.2): developer → system, list-form content
// flattened to its text parts, reasoning copied to reasoning_content.
func messages(in []map[string]any) (json.RawMessage, error) {
	if len(in) == 0 {
		return nil, badRequest("invalid_value", "messages: the list is empty")
	}
	if len(in) > maxMessages {
		return nil, badRequest("invalid_value", "messages: %d, at most %d", len(in), maxMessages)
	}
	for i, m := range in {
		role, _ := m["role"].(string)
		switch role {
		case "developer":
			m["role"] = "system"
		case "system", "user", "assistant", "tool":
		default:
			return nil, badRequest("invalid_value", "messages[%d]: role %q", i, role)
		}
		if parts, ok := m["content"].([]any); ok {
			var b strings.Builder
			for _, p := range parts {
				if pm, ok := p.(map[string]any); ok && pm["type"] == "text" {
					t, _ := pm["text"].(string)
					b.WriteString(t)
				}
			}
			m["content"] = b.String()
		}
		if r, ok := m["reasoning"]; ok {
			if _, has := m["reasoning_content"]; !has {
				m["reasoning_content"] = r
			}
		}
	}
	return json.Marshal(in)
}

// chat answers POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	think := s.opt.Think
	if v, ok := req.Kwargs["enable_thinking"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			fail(w, badRequest("invalid_value", "chat_template_kwargs.enable_thinking: want true or false"))
			return
		}
		think = b
	}
	if req.ReasoningEffort != "" && req.Kwargs["reasoning_effort"] == nil {
		if req.Kwargs == nil {
			req.Kwargs = map[string]any{}
		}
		req.Kwargs["reasoning_effort"] = req.ReasoningEffort
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		fail(w, err)
		return
	}
	tools := req.Tools
	if strings.TrimSpace(string(req.ToolChoice)) == `"none"` {
		tools = nil
	}
	schemas, err := parseTools(tools)
	if err != nil {
		fail(w, badRequest("invalid_value", "tools: %v", err))
		return
	}
	prompt, err := generate.Chat{Messages: msgs, Tools: tools, Think: think, Kwargs: req.Kwargs}.Prompt(s.tok)
	if err != nil {
		fail(w, badRequest("template_error", "template error: %v", err))
		return
	}
	gr, err := s.request(&req.genRequest, prompt, think)
	if err == nil {
		err = req.logprobFields.apply(&gr)
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.generate(w, r, reply{chat: true, logprobs: gr.Logprobs, think: think, tools: schemas, stream: req.Stream,
		usage: req.StreamOptions.IncludeUsage}, gr)
}

// completions answers POST /v1/completions (a plain-text prompt).
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	var text string
	if err := json.Unmarshal(req.Prompt, &text); err != nil {
		fail(w, badRequest("invalid_value", "prompt: want a string"))
		return
	}
	prompt, err := generate.TextPrompt(s.tok, text)
	if err != nil {
		fail(w, badRequest("invalid_value", "%v", err))
		return
	}
	gr, err := s.request(&req.genRequest, prompt, false)
	if err == nil && req.Logprobs != nil {
		n := *req.Logprobs
		err = logprobFields{Logprobs: true, TopLogprobs: &n}.apply(&gr)
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.generate(w, r, reply{logprobs: gr.Logprobs, stream: req.Stream, usage: req.StreamOptions.IncludeUsage}, gr)
}

// reply is how a request's answer is shaped.
type reply struct {
	chat, think, stream, usage bool
	logprobs                   bool
	tools                      []toolSchema
}

// generate runs gr on a slot and writes the answer, streamed or whole.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, rp reply, gr generate.Request) {
	sl, err := s.acquire(r.Context(), gr.Prompt)
	if err != nil {
		if errors.Is(err, r.Context().Err()) {
			return // the client left while queued
		}
		fail(w, err)
		return
	}
	var done *finished
	defer func() { s.release(sl, done) }()
	id := "chatcmpl-" + randHex(12)
	obj, chunkObj := "chat.completion", "chat.completion.chunk"
	if !rp.chat {
		id, obj, chunkObj = "cmpl-"+randHex(12), "text_completion", "text_completion"
	}
	created := time.Now().Unix()
	var st *streamer
	emit := func(string) error { return nil }
	if rp.stream {
		st = &streamer{s: s, w: w, id: id, obj: chunkObj, model: s.opt.Name, created: created, chat: rp.chat,
			split: newSplitter(rp.think), calls: newToolParser(rp.tools)}
		st.begin()
		emit = st.text
		if rp.logprobs {
			gr.OnLogprob = func(lp generate.Logprob) { st.lps = append(st.lps, lp) }
		}
	}
	res, err := sl.e.Generate(r.Context(), gr, emit)
	done = &finished{mt: res.Metrics, finish: res.Finish}
	s.account(res.Metrics)
	if err != nil && !rp.stream {
		if r.Context().Err() != nil {
			return
		}
		fail(w, err) // the request was checked: what fails now is the server's (500)
		return
	}
	usage := usageOf(res.Metrics)
	if rp.stream {
		st.end(rp, res, usage)
		return
	}
	finish := finishReason(res.Finish)
	var logprobs any
	if rp.logprobs && rp.chat {
		logprobs = s.chatLogprobs(res.Logprobs)
	} else if rp.logprobs {
		logprobs = s.completionLogprobs(res.Logprobs, 0)
	}
	if !rp.chat {
		writeJSON(w, map[string]any{"id": id, "object": obj, "created": created, "model": s.opt.Name,
			"choices": []any{map[string]any{"index": 0, "text": res.Text, "finish_reason": finish, "logprobs": logprobs}},
			"usage":   usage})
		return
	}
	reasoning, content, toolText := splitReply(res.Text, rp.think)
	msg := map[string]any{"role": "assistant", "content": content}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	if calls := parseToolCalls(toolText, rp.tools); len(calls) > 0 {
		msg["tool_calls"] = toolCallsJSON(calls)
		if content == "" {
			msg["content"] = nil
		}
		if finish != "length" {
			finish = "tool_calls" // (a call cut off by max_tokens keeps "length")
		}
	}
	writeJSON(w, map[string]any{"id": id, "object": obj, "created": created, "model": s.opt.Name,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": logprobs}},
		"usage":   usage})
}

// account adds a finished reply to the metrics.
func (s *Server) account(mt generate.Metrics) {
	s.met.promptTokens.Add(float64(mt.PromptTokens))
	s.met.genTokens.Add(float64(mt.GeneratedTokens))
	if mt.CachedTokens > 0 {
		s.met.cacheHits.Inc()
		s.met.cachedTokens.Add(float64(mt.CachedTokens))
	}
	if v := mt.PrefillTPS(); v > 0 {
		s.met.prefillTPS.Observe(v)
	}
	if v := mt.DecodeTPS(); v > 0 {
		s.met.decodeTPS.Observe(v)
	}
	if m := s.met; m.drafted != nil {
		m.drafted.Add(float64(mt.Drafted))
		m.kept.Add(float64(mt.Kept))
		m.targetCalls.Add(float64(mt.TargetCalls))
		if mt.DraftFailed != "" {
			m.draftFailures.Inc()
		}
		for n, rounds := range mt.AcceptHist {
			for range rounds {
				m.keptPerRound.Observe(float64(n))
			}
		}
		m.seconds.WithLabelValues("draft").Add(mt.DraftSeconds)
		m.seconds.WithLabelValues("verify").Add(mt.VerifySeconds)
		m.seconds.WithLabelValues("sample").Add(mt.SampleSeconds)
	}
}

// finishReason maps an engine finish onto OpenAI's: a loop guard's end is
// a stop, a cancelled or failed reply a stop too (the client sees the
// text it got).
func finishReason(f generate.Finish) string {
	if f == generate.FinishLength {
		return "length"
	}
	return "stop"
}

func usageOf(mt generate.Metrics) map[string]any {
	return map[string]any{"prompt_tokens": mt.PromptTokens, "completion_tokens": mt.GeneratedTokens,
		"total_tokens":          mt.PromptTokens + mt.GeneratedTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": mt.CachedTokens}}
}

// toolCallsJSON renders calls as OpenAI tool_calls.
func toolCallsJSON(calls []toolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		m := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		out[i] = m
	}
	return out
}

func randHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// streamer writes a streamed reply as server-sent events.
type streamer struct {
	s              *Server
	lps            []generate.Logprob // logprobs not sent yet (logprobFields.apply)
	lpOff          int                // bytes of the tokens whose logprobs were sent (legacy text_offset)
	w              http.ResponseWriter
	id, obj, model string
	created        int64
	chat           bool
	split          *splitter
	calls          *toolParser
	failed         bool
}

// begin sends the headers and, for chat, the role chunk.
func (st *streamer) begin() {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)
	if st.chat {
		st.send(map[string]any{"role": "assistant", "content": ""}, nil)
	}
}

// text streams released text: reasoning and content deltas for chat.
func (st *streamer) text(t string) error {
	if !st.chat {
		return st.sendText(t, nil)
	}
	r, c := st.split.push(t)
	if err := st.deltas(r, c); err != nil {
		return err
	}
	return st.toolDeltas(st.calls.push(st.split.takeTools()))
}

// toolDeltas streams tool-call deltas: a call's first carries its index,
// id, type and name, the others its index and argument text.
func (st *streamer) toolDeltas(ds []toolDelta) error {
	for _, d := range ds {
		fn := map[string]any{"arguments": d.args}
		call := map[string]any{"index": d.index, "function": fn}
		if d.id != "" {
			call["id"], call["type"], fn["name"] = d.id, "function", d.name
		}
		if err := st.send(map[string]any{"tool_calls": []any{call}}, nil); err != nil {
			return err
		}
	}
	return nil
}

func (st *streamer) deltas(r, c string) error {
	if r != "" {
		if err := st.send(map[string]any{"reasoning_content": r}, nil); err != nil {
			return err
		}
	}
	if c != "" {
		return st.send(map[string]any{"content": c}, nil)
	}
	return nil
}

// end streams what the splitter held, the tool calls, the finish chunk,
// the usage chunk (when asked) and [DONE].
func (st *streamer) end(rp reply, res generate.Result, usage map[string]any) {
	finish := finishReason(res.Finish)
	if st.chat {
		r, c, tools := st.split.finish()
		_ = st.deltas(r, c)
		_ = st.toolDeltas(append(st.calls.push(tools), st.calls.finish()...))
		if len(st.calls.calls) > 0 && finish != "length" {
			finish = "tool_calls" // (a call cut off by max_tokens keeps "length")
		}
		_ = st.send(map[string]any{}, &finish)
	} else {
		_ = st.sendText("", &finish)
	}
	if rp.usage {
		st.write(map[string]any{"id": st.id, "object": st.obj, "created": st.created, "model": st.model,
			"choices": []any{}, "usage": usage})
	}
	if !st.failed {
		_, _ = fmt.Fprint(st.w, "data: [DONE]\n\n")
		st.flush()
	}
}

func (st *streamer) send(delta map[string]any, finish *string) error {
	var f any
	if finish != nil {
		f = *finish
	}
	return st.write(map[string]any{"id": st.id, "object": st.obj, "created": st.created, "model": st.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": f, "logprobs": st.logprobs()}}})
}

func (st *streamer) sendText(t string, finish *string) error {
	var f any
	if finish != nil {
		f = *finish
	}
	return st.write(map[string]any{"id": st.id, "object": st.obj, "created": st.created, "model": st.model,
		"choices": []any{map[string]any{"index": 0, "text": t, "finish_reason": f, "logprobs": st.logprobs()}}})
}

// logprobs takes the entries not sent yet as a chunk's logprobs object
// (nil when there are none).
func (st *streamer) logprobs() any {
	if len(st.lps) == 0 {
		return nil
	}
	var out map[string]any
	if st.chat {
		out = st.s.chatLogprobs(st.lps)
	} else {
		out = st.s.completionLogprobs(st.lps, st.lpOff)
		for _, lp := range st.lps {
			st.lpOff += len(st.s.tok.TokenBytes(lp.ID))
		}
	}
	st.lps = st.lps[:0]
	return out
}

// write sends one event; a write error (the client left) stops the reply.
func (st *streamer) write(v any) error {
	if st.failed {
		return errClientGone
	}
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(st.w, "data: %s\n\n", b); err != nil {
		st.failed = true
		return errClientGone
	}
	st.flush()
	return nil
}

func (st *streamer) flush() {
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

var errClientGone = errors.New("the client closed the connection")
