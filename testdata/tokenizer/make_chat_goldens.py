"""Render chat-template goldens with Python Jinja2 set up exactly as transformers does.

transformers' apply_chat_template compiles templates in an ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loopcontrols, overrides the tojson filter (json.dumps with
ensure_ascii=False, key order kept) and adds raise_exception and strftime_now; it renders with
messages, tools (None when absent), documents (None), add_generation_prompt, the special tokens
of tokenizer_config.json and the caller's kwargs. This script reproduces that (see
transformers/utils/chat_template_utils.py) so the goldens need only Jinja2, not transformers.

The Qwen3.5 template (qwen3.5/chat_template.jinja) is raise-happy: cases it refuses are
recorded with "error" instead of "rendered".

Usage (from this directory): python3 make_chat_goldens.py > chat-goldens.jsonl
"""

import json
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def special_tokens(config):
    out = {}
    for name in ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]:
        v = config.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            out[name] = v
    if config.get("additional_special_tokens"):
        out["additional_special_tokens"] = config["additional_special_tokens"]
    return out


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Météo « actuelle » for a city — 日本 too 🌦; quotes \" and \\ and <b>&</b>",
        "parameters": {
            "type": "object",
            "properties": {
                "zeta_city": {"type": "string", "description": "line1\nline2\ttab"},
                "alpha_units": {"type": "string", "enum": ["c", "f"], "default": None},
                "days": {"type": "integer", "minimum": 1, "maximum": 14, "multipleOf": 0.5},
                "verbose": {"type": "boolean", "default": False},
            },
            "required": ["zeta_city"],
        },
    },
}
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}

CASES = [
    {"messages": [{"role": "user", "content": "Hello"}], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Again"}],
     "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "No thinking"}], "add_generation_prompt": True,
     "kwargs": {"enable_thinking": False}},
    {"messages": [{"role": "user", "content": "Thinking on"}], "add_generation_prompt": True,
     "kwargs": {"enable_thinking": True}},
    {"messages": [{"role": "user", "content": "Weather?"}], "tools": [WEATHER, SEARCH], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Weather in Zürich?"},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"id": "c1", "type": "function",
                                   "function": {"name": "get_weather",
                                                "arguments": {"zeta_city": "Zürich", "alpha_units": "c", "days": 3, "verbose": True, "extra": None}}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21.5}"}],
     "tools": [WEATHER], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "Two calls, string arguments"},
                  {"role": "assistant", "content": "Calling both.",
                   "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": "{\"q\": \"go generics\"}"}},
                                  {"type": "function", "function": {"name": "get_weather", "arguments": "{\"zeta_city\":\"Oslo\"}"}}]},
                  {"role": "tool", "content": "result one"}, {"role": "tool", "content": "result two"},
                  {"role": "assistant", "content": "Done."}],
     "tools": [SEARCH, WEATHER], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "Call without the function wrapper"},
                  {"role": "assistant", "content": "", "tool_calls": [{"name": "search", "arguments": {"q": "x"}}]},
                  {"role": "tool", "content": "r"}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "q"},
                  {"role": "assistant", "content": "\nThe answer.", "reasoning_content": "\nStep one.\nStep two.\n"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "<think>\nr1\n</think>\n\na1"},
                  {"role": "user", "content": "q2"}, {"role": "assistant", "content": "<think>\nr2\n</think>\n\na2"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "find it"},
                  {"role": "assistant", "content": "<think>\nplan\n</think>\n\n",
                   "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"q": "it"}}}]},
                  {"role": "tool", "content": "found"},
                  {"role": "assistant", "content": "It is here.", "reasoning_content": "read result"}],
     "tools": [SEARCH], "add_generation_prompt": False},
    {"messages": [{"role": "user", "content": "<tool_response>\nnot really\n</tool_response>"},
                  {"role": "assistant", "content": "ok"}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "first"}, {"role": "system", "content": "mid-conversation system"},
                  {"role": "user", "content": "second"}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "日本語で答えて 😀"}, {"role": "assistant", "content": "はい。"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "system", "content": "tools and system"}, {"role": "user", "content": "  spaced\n\n"}],
     "tools": [], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "Look: "}, {"type": "text", "text": "here"}]}],
     "add_generation_prompt": True},
    # parse_arguments: string arguments decoded before rendering (forge's ChatOptions.ParseArguments, vLLM's habit).
    {"messages": [{"role": "user", "content": "Plan a trip"},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "function": {"name": "plan", "arguments":
                                   "{\"city\": \"Paris\", \"opts\": {\"b\": 1, \"a\": [1, \"x\"]}, \"n\": 5, \"flag\": true, \"none\": null, \"tags\": [\"é\"]}"}}]},
                  {"role": "tool", "content": "ok"}],
     "add_generation_prompt": True, "parse_arguments": True},
    # Cross-check additions (see README.md): nested schemas, key order, mixed argument forms.
    {"messages": [{"role": "system", "content": "Système 🛠"}, {"role": "user", "content": "Réserve « deux »"},
                  {"role": "assistant", "content": "\n\nD'accord.", "reasoning_content": "\n\nbesoin d'un outil\n",
                   "tool_calls": [{"id": "a", "type": "function", "function": {"name": "book", "arguments":
                                   {"z": [{"b": 1, "a": [True, None]}], "ключ": "значение", "日": {"y": -3, "x": "\t"}}}},
                                  {"type": "function", "function": {"name": "book", "arguments": "{\"z\": \"\\u00e9\", \"a\": 1}"}}]},
                  {"role": "tool", "tool_call_id": "a", "content": "ok ✓"}, {"role": "tool", "content": ""}],
     "tools": [{"type": "function", "function": {"name": "book", "description": "Réserve « x » — 日本",
                "parameters": {"type": "object", "properties": {
                    "z": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "array"}}}},
                    "ключ": {"type": "string", "enum": ["значение", "é"]}, "日": {"type": "object", "additionalProperties": False}},
                    "required": ["z"]}}}],
     "add_generation_prompt": True, "kwargs": {"enable_thinking": False}},
    {"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "<think>\nold\n</think>\n\na1"},
                  {"role": "user", "content": "q2 <|im_end|> <think>"}, {"role": "assistant", "content": "a2", "reasoning_content": "r2"},
                  {"role": "user", "content": "\t q3 \u3000"}],
     "add_generation_prompt": True, "kwargs": {"enable_thinking": True}},
    {"messages": [{"role": "user", "content": "use it"},
                  {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"q": "é \"x\""}}}]},
                  {"role": "tool", "content": "result\nwith lines"}],
     "tools": [SEARCH], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "ends with a file separator\u001c"}, {"role": "assistant", "content": "fine\u001f"}],
     "add_generation_prompt": False},
]


def parse_arguments(messages):
    """Decode tool-call arguments given as JSON strings, as vLLM does before rendering."""
    messages = json.loads(json.dumps(messages))
    for m in messages:
        for call in m.get("tool_calls") or []:
            target = call.get("function", call)
            if isinstance(target.get("arguments"), str):
                target["arguments"] = json.loads(target["arguments"])
    return messages


def main():
    templates = {
        "forge-tiny": ("forge-tiny/chat_template.jinja", "forge-tiny/tokenizer_config.json"),
        "qwen3": (None, "qwen3/tokenizer_config.json"),
        "qwen3.5": ("qwen3.5/chat_template.jinja", "qwen3/tokenizer_config.json"),
    }
    for name, (jinja_path, config_path) in templates.items():
        with open(config_path) as f:
            config = json.load(f)
        source = open(jinja_path).read() if jinja_path else config["chat_template"]
        template = compile_template(source)
        for case in CASES:
            kwargs = {**special_tokens(config), **case.get("kwargs", {})}
            messages = parse_arguments(case["messages"]) if case.get("parse_arguments") else case["messages"]
            out = {"template": name, **case}
            try:
                out["rendered"] = template.render(messages=messages, tools=case.get("tools"), documents=None,
                                                  add_generation_prompt=case["add_generation_prompt"], **kwargs)
            except Exception as e:  # the template refuses the conversation
                out["error"] = str(e)
            print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
