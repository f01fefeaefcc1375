// Package server answers the OpenAI API (chat completions, completions,
// models) from one model, as `forge serve` runs it: reference-pipeline.md
// §6, with its defects fixed where a client would notice.
//
// Each of Options.Slots slots owns a generate.Engine, so requests on
// different slots run at once; a request waits in a bounded queue for an
// idle slot (429 with Retry-After when the queue is full) and takes the
// idle slot whose state shares the longest prefix with its prompt. A
// slot's engine reuses its live state, or the snapshot it keeps before
// the last assistant header, when that is a strict prefix of the next
// prompt (generate.Engine), so a conversation's next turn prefills only
// its new tokens; reply tokens do not depend on whether they came from a
// cached state (tests compare).
//
// Replies: reasoning_content is the text before "</think>" when thinking
// is on, Qwen XML tool calls (<tool_call><function=NAME><parameter=KEY>)
// become tool_calls typed by the tool's JSON schema, and streaming (SSE)
// never emits a partial tag or stop-string prefix: a role chunk first,
// reasoning and content deltas that only append, the tool calls whole
// once complete, a finish chunk, a usage chunk when asked, then [DONE].
// Errors are OpenAI's {"error": {"message", "type", "code"}}; /metrics
// serves Prometheus series.
//
// Files: server.go (Server, routes, slots and queue, errors, health),
// chat.go (requests, replies, streaming), reply.go (reasoning and
// tool-call parsing), metrics.go (Prometheus).
package server
