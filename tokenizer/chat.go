package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ardanlabs/jinja"
)

// ChatOptions are the arguments of transformers' apply_chat_template besides the messages.
// The zero value renders the default template without tools or generation prompt.
type ChatOptions struct {
	// Tools is a JSON list of tool schemas (OpenAI style), passed as `tools`; nil passes None.
	Tools json.RawMessage
	// AddGenerationPrompt appends the start of an assistant turn.
	AddGenerationPrompt bool
	// Kwargs is a JSON object of extra template variables, such as {"enable_thinking": false}.
	Kwargs json.RawMessage
	// Template names one of several named templates; "" picks "tool_use" when tools are given
	// and such a template exists, else "default", as transformers does.
	Template string
	// ParseArguments turns tool-call arguments given as a JSON string holding an object (as the
	// OpenAI API sends them) into that object before rendering, as vLLM does; templates such as
	// Qwen3.5's iterate over `arguments|items` and reject strings. Off, arguments reach the
	// template as given, as with transformers.
	ParseArguments bool
	// MaxBytes bounds the messages, tools and kwargs JSON together; 0 means
	// DefaultChatMaxBytes and a negative value lifts the bound.
	MaxBytes int
	// MaxDepth bounds how deeply arrays and objects nest in each of them (and in tool-call
	// arguments that ParseArguments decodes, counted from the top of the messages); 0 means
	// DefaultChatMaxDepth and a negative value lifts the bound.
	MaxDepth int
}

// Chat's input bounds. Rendering costs time quadratic in the nesting depth (the template
// engine prints a nested value level by level), so depth is bounded, before any decoding, by
// far more than conversations need: a message is 2 levels, its content parts 4, a tool-call
// argument object 6; a tool's JSON schema with 10 levels of nested objects (the deepest that
// OpenAI's structured outputs accept) is about 24. The size bound is well above a 262,144-token
// context (about 1 MiB of text, at most 6 MiB JSON-escaped).
const (
	DefaultChatMaxBytes = 16 << 20
	DefaultChatMaxDepth = 64
)

// ErrLimit marks an input refused for exceeding a bound; the error names the bound.
var ErrLimit = errors.New("input over a limit")

// limits returns the effective MaxBytes and MaxDepth (a negative value for none).
func (o *ChatOptions) limits() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = o.MaxBytes, o.MaxDepth
	if maxBytes == 0 {
		maxBytes = DefaultChatMaxBytes
	}
	if maxDepth == 0 {
		maxDepth = DefaultChatMaxDepth
	}
	return maxBytes, maxDepth
}

// checkLimits refuses inputs over the bounds, in one pass over their bytes.
func (o *ChatOptions) checkLimits(messagesJSON []byte) error {
	maxBytes, maxDepth := o.limits()
	if n := len(messagesJSON) + len(o.Tools) + len(o.Kwargs); maxBytes >= 0 && n > maxBytes {
		return fmt.Errorf("messages, tools and kwargs hold %d bytes, over the limit of %d (ChatOptions.MaxBytes): %w", n, maxBytes, ErrLimit)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"messages", messagesJSON}, {"tools", o.Tools}, {"kwargs", o.Kwargs}} {
		if off := jsonTooDeep(in.data, maxDepth); off >= 0 {
			return fmt.Errorf("%s nest deeper than %d levels at byte offset %d (ChatOptions.MaxDepth): %w", in.name, maxDepth, off, ErrLimit)
		}
	}
	return nil
}

// chatTemplates holds a tokenizer's chat templates by name, compiled on first use.
type chatTemplates struct {
	sources  map[string]string
	mu       sync.Mutex
	compiled map[string]*jinja.Template
}

// load gathers the templates: chat_template.jinja (or, without it, tokenizer_config.json's
// chat_template, a string or a list of {name, template}) as "default", plus
// additional_chat_templates/*.jinja.
func (c *chatTemplates) load(dir string, fromConfig json.RawMessage) error {
	c.sources = map[string]string{}
	if !isNull(fromConfig) {
		var one string
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(fromConfig, &one); err == nil {
			c.sources["default"] = one
		} else if err := json.Unmarshal(fromConfig, &named); err == nil {
			for _, n := range named {
				c.sources[n.Name] = n.Template
			}
		} else {
			return fmt.Errorf("tokenizer_config.json: chat_template is neither a string nor a list of {name, template}")
		}
	}
	data, err := readOptional(filepath.Join(dir, "chat_template.jinja"))
	if err != nil {
		return err
	}
	if data != nil {
		c.sources["default"] = string(data)
	}
	extra, err := templateFiles(dir)
	if err != nil {
		return fmt.Errorf("additional_chat_templates: %w", err)
	}
	for name, src := range extra {
		c.sources[name] = src
	}
	return nil
}

// template returns the compiled template for name.
func (c *chatTemplates) template(name string) (*jinja.Template, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.compiled[name]; ok {
		return t, nil
	}
	src, ok := c.sources[name]
	if !ok {
		return nil, fmt.Errorf("template %q (have %v): %w", name, c.names(), ErrNoTemplate)
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %q: %w", name, err)
	}
	if c.compiled == nil {
		c.compiled = map[string]*jinja.Template{}
	}
	c.compiled[name] = t
	return t, nil
}

func (c *chatTemplates) names() []string {
	var names []string
	for n := range c.sources {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ChatTemplates lists the names of the tokenizer's chat templates ("default" for a single one).
func (t *Tokenizer) ChatTemplates() []string { return t.chat.names() }

// reserved are the variables Chat sets itself; Kwargs may not redefine them.
var reserved = []string{"messages", "tools", "documents", "add_generation_prompt"}

// Chat renders a conversation (a JSON list of messages with role, content and optionally
// tool_calls, reasoning_content, ...) with the tokenizer's chat template, as transformers'
// apply_chat_template(messages, tools=..., add_generation_prompt=..., **kwargs,
// tokenize=False): the template sees messages, tools (None when absent), documents (None),
// add_generation_prompt, the special tokens of tokenizer_config.json (bos_token, eos_token, ...,
// additional_special_tokens) and the kwargs. JSON object keys keep their order, so tojson
// prints tool schemas and arguments as given. Encode the result for the prompt's ids.
//
// Inputs over opts.MaxBytes or nesting deeper than opts.MaxDepth are refused with an error
// wrapping ErrLimit before any other work.
func (t *Tokenizer) Chat(messagesJSON []byte, opts ChatOptions) (string, error) {
	if err := opts.checkLimits(messagesJSON); err != nil {
		return "", fmt.Errorf("chat: %w", err)
	}
	name := opts.Template
	if name == "" {
		name = "default"
		if _, ok := t.chat.sources["tool_use"]; ok && !isNull(opts.Tools) {
			name = "tool_use"
		}
	}
	if len(t.chat.sources) == 0 {
		return "", fmt.Errorf("chat: %w", ErrNoTemplate)
	}
	tmpl, err := t.chat.template(name)
	if err != nil {
		return "", fmt.Errorf("chat: %w", err)
	}
	vars := make(map[string]jinja.Value)
	for k, v := range t.specials.vars {
		vars[k] = jinja.NewString(v)
	}
	if len(t.specials.additional) > 0 {
		var items []jinja.Value
		for _, a := range t.specials.additional {
			items = append(items, jinja.NewString(a))
		}
		vars["additional_special_tokens"] = jinja.NewList(items)
	}
	if !isNull(opts.Kwargs) {
		kw, err := jsonValue(opts.Kwargs)
		if err != nil || !kw.IsDict() {
			return "", fmt.Errorf("chat: kwargs must be a JSON object: %v", err)
		}
		d := kw.AsDict()
		for _, k := range d.Keys {
			if slices.Contains(reserved, k) {
				return "", fmt.Errorf("chat: kwargs may not set %q", k)
			}
			vars[k] = d.Data[k]
		}
	}
	msgs, err := jsonValue(messagesJSON)
	if err != nil || !msgs.IsList() {
		return "", fmt.Errorf("chat: messages must be a JSON list: %v", err)
	}
	if opts.ParseArguments {
		_, maxDepth := opts.limits()
		if err := parseArguments(msgs, maxDepth); err != nil {
			return "", fmt.Errorf("chat: %w", err)
		}
	}
	vars["messages"] = msgs
	vars["tools"] = jinja.None()
	if !isNull(opts.Tools) {
		tools, err := jsonValue(opts.Tools)
		if err != nil || !tools.IsList() {
			return "", fmt.Errorf("chat: tools must be a JSON list: %v", err)
		}
		vars["tools"] = tools
	}
	vars["documents"] = jinja.None()
	vars["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	out, err := tmpl.RenderValues(vars)
	if err != nil {
		return "", fmt.Errorf("chat: template %q: %w", name, err)
	}
	return out, nil
}

// parseArguments replaces, in every message's tool_calls, string arguments that hold a JSON
// object (under the call or its "function") with the decoded object. Such an object must not
// take the messages deeper than maxDepth levels (negative: no bound).
func parseArguments(msgs jinja.Value, maxDepth int) error {
	for i, m := range msgs.AsList().Items {
		if !m.IsDict() {
			continue
		}
		calls, ok := m.AsDict().Get("tool_calls")
		if !ok || !calls.IsList() {
			continue
		}
		for j, call := range calls.AsList().Items {
			if !call.IsDict() {
				continue
			}
			target, depth := call.AsDict(), 4 // messages, message, tool_calls, call
			if fn, ok := target.Get("function"); ok && fn.IsDict() {
				target, depth = fn.AsDict(), 5
			}
			args, ok := target.Get("arguments")
			if !ok || !args.IsString() {
				continue
			}
			raw := []byte(args.AsString())
			if maxDepth >= 0 {
				if off := jsonTooDeep(raw, max(maxDepth-depth, 0)); off >= 0 {
					return fmt.Errorf("message %d tool call %d: arguments take the messages deeper than %d levels at byte offset %d of the arguments (ChatOptions.MaxDepth): %w", i, j, maxDepth, off, ErrLimit)
				}
			}
			if v, err := jsonValue(raw); err == nil && v.IsDict() {
				target.Set("arguments", v)
			}
		}
	}
	return nil
}
