package forge_test

import (
	"bufio"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forge"
	"forge/server"
)

// TestServeShutdown: cancelling Serve's context while a long reply
// streams ends that reply within the shutdown timeout and returns only
// after its handler is done with the model (whose mapping Serve then
// releases: a handler still decoding would fault on it).
func TestServeShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- forge.Serve(ctx, forge.ServeConfig{Model: filepath.Join("models", "forge-tiny"), Addr: "127.0.0.1:0",
			Options: server.Options{Slots: 1}, ShutdownTimeout: 50 * time.Millisecond,
			Ready: func(a string) { addr <- a }})
	}()
	var base string
	select {
	case base = <-addr:
	case err := <-served:
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"Count."}],"max_tokens":4000,"temperature":0,"stream":true}`
	resp, err := http.Post("http://"+base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil { // streaming has begun
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	// The stream was cut (the reply had thousands of tokens to go).
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		if strings.Contains(line, "[DONE]") {
			break
		}
	}
}
