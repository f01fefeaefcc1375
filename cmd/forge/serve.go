package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"forge"
	"forge/generate"
	"forge/model"
	"forge/server"
)

// ServeCmd is `forge serve`.
type ServeCmd struct {
	Model     string   `required:"" type:"existingdir" help:"Checkpoint or bundle directory (with its tokenizer and chat template)."`
	Host      string   `default:"127.0.0.1" help:"Address to listen on (127.0.0.1: this machine only)."`
	Port      int      `default:"8080" help:"Port to listen on."`
	Parallel  int      `default:"2" help:"Requests generated at once (slots), each with its own state."`
	Queue     int      `default:"8" help:"Requests that may wait for a slot; more get 429 with Retry-After."`
	APIKey    string   `name:"api-key" env:"FORGE_API_KEY" help:"Require 'Authorization: Bearer KEY' on every route but /health."`
	MaxTokens int      `name:"max-tokens" default:"${max_tokens}" help:"Default max_tokens of a reply (capped by the context)."`
	Think     bool     `negatable:"" help:"Think first when a request does not set chat_template_kwargs.enable_thinking."`
	KV        string   `name:"kv" default:"f32" enum:"f32,int8" help:"KV cache: f32 or int8."`
	Act       string   `name:"act" default:"auto" enum:"auto,f32,int8" help:"Activations times 4-bit LUT weights: int8, f32 (exact), or auto: int8 where this CPU has int8 kernels, f32 elsewhere."`
	MaxBody   int64    `name:"max-body" default:"4194304" help:"Largest request body in bytes (larger: 413)."`
	MaxPrompt int      `name:"max-prompt-tokens" default:"0" help:"Longest prompt in tokens (0: the model's context; longer: 400)."`
	CacheMB   int      `name:"cache-mb" default:"1024" help:"Prompt cache budget in MiB: model-state snapshots any slot can resume from, least recently used evicted first (0: off, each slot reuses only its own last prompt)."`
	CORS      []string `name:"cors-origin" placeholder:"ORIGIN" help:"A browser origin allowed to read /health and /v1/models (repeat for several; CORS is off by default and never opens the completion routes)."`
	Draft     string   `placeholder:"DIR" type:"existingdir" help:"A small model with the same tokenizer that drafts tokens for speculative decoding in every slot (the same replies, fewer target steps)."`
	DraftK    int      `name:"draft-k" placeholder:"K" help:"With --draft: the most tokens drafted per target call, 1–16 (default ${draft_k}); the length adapts to the acceptance rate."`
	Batch     string   `default:"auto" enum:"auto,on,off" help:"Run the decode steps of slots decoding at the same time as one batch that reads the weights once: auto (when a step reads at least 64 MiB of weights; smaller models step faster apart), on or off. Replies are the same either way."`
}

func (c *ServeCmd) Run(ctx context.Context) error {
	if err := positive("--parallel", c.Parallel, "--max-tokens", c.MaxTokens, "--port", c.Port); err != nil {
		return err
	}
	if c.Port > 65535 {
		return fmt.Errorf("--port %d: want 1–65535", c.Port)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--queue", c.Queue}, {"--max-prompt-tokens", c.MaxPrompt}, {"--cache-mb", c.CacheMB}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d: want 0 or more", f.name, f.v)
		}
	}
	if c.DraftK != 0 {
		if c.Draft == "" {
			return errors.New("--draft-k needs --draft")
		}
		if err := generate.CheckDraftK(c.DraftK); err != nil {
			return fmt.Errorf("--draft-k: %w", err)
		}
	}
	kv, _ := model.ParseKV(c.KV)    // kong checked the enum
	act, _ := model.ParseAct(c.Act) // and this one
	q, cache := c.Queue, c.CacheMB
	if q == 0 {
		q = -1 // server.Options: < 0 is no queue
	}
	if cache == 0 {
		cache = -1 // server.Options: < 0 is no prompt cache
	}
	return forge.Serve(ctx, forge.ServeConfig{Model: c.Model, Addr: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), Draft: c.Draft,
		Options: server.Options{Slots: c.Parallel, Queue: q, APIKey: c.APIKey, MaxTokens: c.MaxTokens,
			Think: c.Think, KV: kv, Act: act, MaxBody: c.MaxBody, MaxPrompt: c.MaxPrompt, CacheMB: cache, CORSOrigins: c.CORS,
			DraftK: c.DraftK, Batch: map[string]int{"auto": generate.BatchAuto, "on": generate.BatchOn, "off": generate.BatchOff}[c.Batch]},
		Warn: warn,
		Ready: func(addr string) {
			fmt.Fprintf(os.Stderr, "forge serve: %s on http://%s/v1 (%d slots)\n", c.Model, addr, c.Parallel)
		}})
}
