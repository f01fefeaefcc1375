package tokenizer

import (
	"encoding/json"
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
func (t *Tokenizer) Chat(messagesJSON []byte, opts ChatOptions) (string, error) {
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
		parseArguments(msgs)
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
// object (under the call or its "function") with the decoded object.
func parseArguments(msgs jinja.Value) {
	for _, m := range msgs.AsList().Items {
		if !m.IsDict() {
			continue
		}
		calls, ok := m.AsDict().Get("tool_calls")
		if !ok || !calls.IsList() {
			continue
		}
		for _, call := range calls.AsList().Items {
			if !call.IsDict() {
				continue
			}
			target := call.AsDict()
			if fn, ok := target.Get("function"); ok && fn.IsDict() {
				target = fn.AsDict()
			}
			args, ok := target.Get("arguments")
			if !ok || !args.IsString() {
				continue
			}
			if v, err := jsonValue([]byte(args.AsString())); err == nil && v.IsDict() {
				target.Set("arguments", v)
			}
		}
	}
}
