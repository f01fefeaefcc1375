// Package server answers the OpenAI API (chat completions, completions,
// models) from one model, as `forge serve` runs it: reference-pipeline.md
// §6, with its defects fixed where a client would notice.
//
// Each of Options.Slots slots owns a generate.Engine, so requests on
// different slots run at once; a request waits in a bounded queue for an
// idle slot (429 with Retry-After when the queue is full) and takes the
// idle slot whose own turn snapshot spares the most of its prompt. The
// slots share a generate.Cache of State snapshots (Options.CacheMB,
// least recently used evicted) taken at the end of a system prompt and
// before the last assistant header, so a conversation's next turn, or a
// new conversation with a known system prompt, on any slot prefills only
// what follows; a cached reply is the uncached one bit for bit, tokens
// and logprobs (generate's package documentation says why; the tests
// compare hundreds of conversations and a 1,000-request load).
//
// Slots decoding at the same time run their decode steps as one batch
// (Options.Batch, generate.Batcher: one model.StepBatch reads the weights
// once for every slot's row) when a step reads enough weights for that to
// be faster; each row is its slot's own decode step bit for bit, so
// batching never changes a reply. With Options.Draft every slot decodes
// speculatively instead (generate's package documentation), the drafter's
// State cached beside the target's.
//
// Replies: reasoning_content is the text before "</think>" when thinking
// is on, Qwen XML tool calls (<tool_call><function=NAME><parameter=KEY>)
// become tool_calls typed by the tool's JSON schema, and streaming (SSE)
// never emits a partial tag or stop-string prefix: a role chunk first,
// reasoning and content deltas that only append, tool calls as they are
// generated (id and name once "<function=NAME>" is complete, then argument
// deltas: string values piece by piece, typed values whole), a finish
// chunk, a usage chunk when asked, then [DONE]. logprobs (with up to 20
// top_logprobs) come with whole replies and streamed ones, a token's entry
// in the first chunk after it is sampled (its text may be held back a
// little longer). Errors are OpenAI's {"error":
// {"message", "type", "code"}}; /metrics serves Prometheus series.
//
// Files: server.go (Server, routes, slots and queue, errors, health),
// chat.go (requests, replies, streaming), reply.go (reasoning split,
// tool schemas), toolcall.go (the streaming tool-call parser),
// logprobs.go, metrics.go (Prometheus).
package server
