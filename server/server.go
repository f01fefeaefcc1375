package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"forge/generate"
	"forge/model"
	"forge/tokenizer"
)

// Options configure a Server; the zero value is the default.
type Options struct {
	Name      string    // the model id /v1/models lists (default "forge")
	Slots     int       // requests generated at once, each with its own state (0: 2)
	Queue     int       // requests that may wait for a slot (0: 8; < 0: none); more get 429
	APIKey    string    // if set, every route but /health needs "Authorization: Bearer KEY"
	MaxBody   int64     // request body limit in bytes (0: 4 MiB); larger bodies get 413
	MaxTokens int       // default max_tokens (0: generate.DefaultMaxTokens)
	MaxPrompt int       // longest prompt in tokens (0: the model's context); longer ones get 400
	Think     bool      // enable_thinking when a request does not say
	KV        model.KV  // the slots' KV cache format
	Act       model.Act // the slots' activation precision
	// CacheMB is the prompt cache's budget in MiB: State snapshots that
	// every slot may resume from, least recently used evicted first (0:
	// 1024; < 0: none, each slot reuses only its own last prompt).
	CacheMB int
	// NoCache makes every request start from an empty state (for
	// comparing cached and uncached replies).
	NoCache bool
	// CORSOrigins may read the read-only routes (/health, /v1/models) from
	// a browser: they get Access-Control-Allow-Origin there and nowhere
	// else (none: CORS off).
	CORSOrigins []string
	// Draft, when set, drafts for speculative decoding in every slot
	// (generate.Options.Draft; the caller checks it with
	// generate.CheckDraft), at most DraftK tokens per target call
	// (0: generate.DefaultDraftK), every round DraftK with DraftFixed.
	// DraftName identifies it in /health.
	Draft      *model.Model
	DraftK     int
	DraftFixed bool
	DraftName  string
	// Batch is whether slots decoding at the same time run their steps as
	// one batch (generate.Batcher): generate.BatchAuto (the zero value:
	// when a step reads at least generate.BatchBytes of weights),
	// generate.BatchOn or generate.BatchOff.
	Batch int
}

// Limits of a request besides the body size.
const (
	maxMessages = 4096
	maxStops    = 16
)

// Server answers the OpenAI API from one model with Options.Slots engines.
// It is an http.Handler.
type Server struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer
	opt   Options
	mux   *http.ServeMux
	met   *metrics
	free  chan *slot // idle slots
	slots []*slot
	wait  chan struct{} // queue places: a request holds one while it waits
	start time.Time
	cache *generate.Cache // shared by the slots; nil: none
	batch *generate.Batcher

	mu   sync.Mutex
	last *finished // the request that finished last (for /health), nil before the first
}

// slot is one engine.
type slot struct {
	id int
	e  *generate.Engine
}

// finished is what /health reports of the request that finished last.
type finished struct {
	pos    int // its slot's position after it
	mt     generate.Metrics
	finish generate.Finish
}

// New returns a Server for m (whose tokenizer is tok).
func New(m *model.Model, tok *tokenizer.Tokenizer, opt Options) *Server {
	opt.Act = m.ResolveAct(opt.Act) // /health reports what the slots run
	if opt.Name == "" {
		opt.Name = "forge"
	}
	if opt.Slots <= 0 {
		opt.Slots = 2
	}
	if opt.Queue == 0 {
		opt.Queue = 8
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = 4 << 20
	}
	if opt.MaxTokens <= 0 {
		opt.MaxTokens = generate.DefaultMaxTokens
	}
	s := &Server{m: m, tok: tok, opt: opt, mux: http.NewServeMux(),
		free: make(chan *slot, opt.Slots), wait: make(chan struct{}, max(opt.Queue, 0)), start: time.Now()}
	if opt.CacheMB == 0 {
		opt.CacheMB = 1024
	}
	if opt.CacheMB > 0 && !opt.NoCache {
		s.cache = generate.NewCache(int64(opt.CacheMB) << 20)
	}
	s.met = newMetrics(s.cache, opt.Draft != nil)
	s.batch = generate.NewBatcher(m, opt.Batch)
	for i := range opt.Slots {
		sl := &slot{id: i, e: generate.New(m, tok, generate.Options{KV: opt.KV, Act: opt.Act, Cache: s.cache, NoReuse: opt.NoCache,
			Draft: opt.Draft, DraftK: opt.DraftK, DraftFixed: opt.DraftFixed, Batcher: s.batch})}
		s.slots = append(s.slots, sl)
		s.free <- sl
	}
	s.route("POST /v1/chat/completions", "chat", s.chat)
	s.route("POST /chat/completions", "chat", s.chat)
	s.route("POST /v1/completions", "completions", s.completions)
	s.route("POST /completions", "completions", s.completions)
	s.route("GET /v1/models", "models", s.models)
	s.route("GET /models", "models", s.models)
	s.route("GET /health", "health", s.health)
	s.route("GET /v1/health", "health", s.health)
	s.route("GET /metrics", "metrics", s.met.handler().ServeHTTP)
	s.route("OPTIONS /", "preflight", s.preflight)
	s.route("/", "other", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// route registers h for pattern, with authentication (all but health),
// the body limit and the request metrics.
func (s *Server) route(pattern, name string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() { s.met.requests.WithLabelValues(name, strconv.Itoa(sw.status)).Inc() }()
		if (name == "health" || name == "models") && s.allowed(r) {
			sw.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
			sw.Header().Set("Vary", "Origin")
		}
		if s.opt.APIKey != "" && name != "health" && name != "preflight" && r.Header.Get("Authorization") != "Bearer "+s.opt.APIKey {
			writeError(sw, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing or wrong API key (Authorization: Bearer KEY)")
			return
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.opt.MaxBody)
		h(sw, r)
	})
}

// allowed reports whether r comes from an origin CORSOrigins lists.
func (s *Server) allowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	for _, a := range s.opt.CORSOrigins {
		if o != "" && o == a {
			return true
		}
	}
	return false
}

// preflight answers a CORS preflight: 204 for an allowed origin on a
// read-only route, 403 otherwise (completions never opt in).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health", "/v1/health", "/v1/models", "/models":
		if s.allowed(r) {
			w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
			w.Header().Set("Access-Control-Allow-Methods", "GET")
			w.Header().Set("Vary", "Origin")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusForbidden, "invalid_request_error", "cors_forbidden", "cross-origin requests are not allowed here")
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes streaming flushes through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// apiError is an error with its HTTP status and OpenAI type and code.
type apiError struct {
	status     int
	typ, code  string
	msg        string
	retryAfter bool
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: code, msg: fmt.Sprintf(format, a...)}
}

// writeError writes OpenAI's error object.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": c, "param": nil}})
}

// fail writes err: an *apiError as it says, a body over the limit as 413,
// anything else as a 500.
func fail(w http.ResponseWriter, err error) {
	var ae *apiError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		if ae.retryAfter {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, ae.status, ae.typ, ae.code, ae.msg)
	case errors.As(err, &mb):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("request body over %d bytes", mb.Limit))
	default:
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
	}
}

// acquire returns an idle slot, preferring the one whose state holds the
// longest prefix of prompt (its cache), waiting in the queue while all are
// busy; a full queue is a 429.
func (s *Server) acquire(ctx context.Context, prompt []int) (*slot, error) {
	select {
	case sl := <-s.free:
		return s.best(sl, prompt), nil
	default:
	}
	select {
	case s.wait <- struct{}{}:
	default:
		return nil, &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "queue_full",
			msg: "all slots are busy and the queue is full; retry later", retryAfter: true}
	}
	s.met.queue.Inc()
	defer func() { <-s.wait; s.met.queue.Dec() }()
	select {
	case sl := <-s.free:
		return s.best(sl, prompt), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// best swaps sl for another idle slot whose turn snapshot spares more of
// prompt's prefill (resuming there needs no copy of a cached snapshot),
// if there is one.
func (s *Server) best(sl *slot, prompt []int) *slot {
	for range len(s.free) {
		select {
		case o := <-s.free:
			if o.e.Reusable(prompt) > sl.e.Reusable(prompt) {
				sl, o = o, sl
			}
			s.free <- o
		default:
		}
	}
	s.met.active.Inc()
	return sl
}

// release returns a slot after its request, whose measurements f are.
func (s *Server) release(sl *slot, f *finished) {
	if f != nil {
		f.pos = len(sl.e.Fed())
		s.mu.Lock()
		s.last = f
		s.mu.Unlock()
	}
	s.met.active.Dec()
	s.free <- sl
}

// models answers GET /v1/models.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.opt.Name, "object": "model", "created": s.start.Unix(), "owned_by": "forge",
		"max_model_len": s.m.Config().MaxContext,
	}}})
}

// health answers GET /health with the reference's fields: the context
// cap and, from the request that finished last, its slot's position, the
// prefill and decode measurements and the finish reason; per slot too.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	h := map[string]any{"status": "ok", "model": s.opt.Name, "context": s.m.Config().MaxContext,
		"kv_cache_dtype": s.opt.KV.String(), "activations": s.opt.Act.String(), "slots": len(s.slots),
		"idle_slots": len(s.free), "queued": len(s.wait)}
	bs := s.batch.Stats()
	h["batch"] = map[string]any{"on": s.batch.On(), "batches": bs.Batches, "steps": bs.Rows, "shared_steps": bs.Shared}
	if s.cache != nil {
		st := s.cache.Stats()
		h["prompt_cache"] = map[string]any{"entries": st.Entries, "bytes": st.Bytes, "budget_bytes": s.cache.Budget(),
			"hits": st.Hits, "misses": st.Misses, "evictions": st.Evictions}
	}
	if last != nil {
		h["position"] = last.pos
		mt := last.mt
		h["prefill"] = map[string]any{"tokens": mt.PrefillTokens, "seconds": mt.PrefillSeconds,
			"tokens_per_second": mt.PrefillTPS(), "cached_tokens": mt.CachedTokens}
		h["decode"] = map[string]any{"tokens": mt.GeneratedTokens, "seconds": mt.DecodeSeconds,
			"tokens_per_second": mt.DecodeTPS(), "finish_reason": string(last.finish)}
		if s.opt.Draft != nil {
			d := map[string]any{"drafter": s.opt.DraftName, "drafted": mt.Drafted, "kept": mt.Kept,
				"accept_rate": mt.AcceptRate(), "accept_hist": mt.AcceptHist, "target_calls": mt.TargetCalls,
				"tokens_per_call": mt.TokensPerCall(), "draft_seconds": mt.DraftSeconds,
				"verify_seconds": mt.VerifySeconds, "sample_seconds": mt.SampleSeconds}
			if mt.DraftFailed != "" {
				d["failed"] = mt.DraftFailed
			}
			h["speculative"] = d
		}
	}
	writeJSON(w, h)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON request body into v (whatever Content-Type the
// client sent: curl -d sends a form type).
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return badRequest("bad_json", "bad json: %v", err)
	}
	return nil
}
