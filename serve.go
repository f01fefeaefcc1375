package forge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"forge/generate"
	"forge/server"
)

// ServeConfig configures Serve. Zero values are the defaults.
type ServeConfig struct {
	Model string // checkpoint or bundle directory
	Addr  string // listen address (default "127.0.0.1:8080")
	Draft string // a drafter's directory for speculative decoding, or "" (Options.DraftK, DraftFixed apply)
	server.Options
	// ShutdownTimeout bounds how long in-flight requests may finish after
	// ctx is cancelled (0: 10 s); then their connections are closed.
	ShutdownTimeout time.Duration
	// Warn, if set, receives the runtime's warnings (Runtime.Warnings)
	// once the model is loaded.
	Warn func(string)
	// Ready, if set, is called with the listening address once requests
	// are accepted.
	Ready func(addr string)
}

// Serve answers the OpenAI API for cfg.Model on cfg.Addr until ctx is
// cancelled, then shuts down gracefully.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	rt, err := OpenRuntime(cfg.Model, generate.Options{KV: cfg.KV, Act: cfg.Act})
	if err != nil {
		return err
	}
	defer rt.Close()
	if cfg.Name == "" {
		cfg.Name = rt.Name
	}
	if cfg.Draft != "" {
		if err := rt.AttachDraft(cfg.Draft, cfg.DraftK, cfg.DraftFixed); err != nil {
			return err
		}
		d := rt.Draft
		cfg.Options.Draft, cfg.DraftK = d.Model, d.K
		cfg.DraftName = d.Name + " " + d.Kind + ":" + d.Fingerprint
	}
	if cfg.Warn != nil {
		for _, w := range rt.Warnings {
			cfg.Warn(w)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Handlers must be done with the model before it is unmapped: Close
	// does not wait for them, so count them.
	srv := server.New(rt.Model, rt.Tok, cfg.Options)
	var inflight sync.WaitGroup
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		srv.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // in-flight requests past the timeout: their connections close, their contexts end
	}
	err = <-done
	inflight.Wait() // a cancelled reply stops at its next token
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
