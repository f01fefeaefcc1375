package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"forge/generate"
	"forge/server"
)

// TestLoad: 1,000 mixed requests (streamed and whole, with and without
// tools, short and long prompts over shared system prompts) from 16
// concurrent clients, 10% of them leaving mid-stream, against a server
// with 2 slots, a small prompt cache and batched decode steps: no 5xx and
// no broken connection, every completed reply equal to the same request's
// reply from a server without a cache (nor batching), steps shared by the
// slots, and afterwards the heap (past the cache's budget) and the
// goroutines back where they were before the load.
func TestLoad(t *testing.T) {
	requests, clients := 1000, 16
	if !fastKernels {
		requests = 200 // the pure-Go kernels are ~5× slower; the vector run sends 1,000
	}
	const cacheMB = 8
	url, c := start(t, server.Options{Slots: 2, Queue: 2 * clients, CacheMB: cacheMB, Batch: generate.BatchOn})
	_, plain := start(t, server.Options{Slots: 1, NoCache: true})
	g := rand.New(rand.NewPCG(21, 22))
	words := strings.Fields("func main package return if else for range the river a of code print string int error nil go test list map value key loop")
	phrase := func(lo, hi int) string {
		w := make([]string, lo+g.IntN(hi-lo))
		for i := range w {
			w[i] = words[g.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	systems := []string{phrase(80, 120), phrase(20, 40), phrase(200, 300)}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("Weather of a city"),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	})}
	// 120 distinct requests, each sent about 8 times: shared prefixes and
	// repeats, so the cache is hit, missed and evicted.
	type job struct {
		p    openai.ChatCompletionNewParams
		want string // the uncached reply
	}
	pool := make([]job, 120)
	for i := range pool {
		msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(systems[g.IntN(len(systems))])}
		for range g.IntN(3) {
			msgs = append(msgs, openai.UserMessage(phrase(2, 30)), openai.AssistantMessage(phrase(2, 30)))
		}
		msgs = append(msgs, openai.UserMessage(phrase(2, 40)))
		p := greedy(msgs, int64(1+g.IntN(16)))
		if g.IntN(4) == 0 {
			p.Tools = tools
		}
		pool[i].p = p
	}
	for i := range pool {
		r, err := plain.Chat.Completions.New(context.Background(), pool[i].p)
		if err != nil {
			t.Fatal(err)
		}
		pool[i].want = r.Choices[0].Message.Content
	}
	// Warm up: each slot's working memory grows to the longest prompt's
	// chunk once and is kept (decode steps allocate nothing).
	var warm sync.WaitGroup
	for k := range 2 {
		warm.Go(func() {
			for i := k; i < len(pool); i += 2 {
				if _, err := c.Chat.Completions.New(context.Background(), pool[i].p); err != nil {
					t.Error(err)
				}
			}
		})
	}
	warm.Wait()
	base := heapAndGoroutines()
	var done, left, fails atomic.Int64
	var mu sync.Mutex
	var firstErr error
	failf := func(format string, a ...any) {
		fails.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = fmt.Errorf(format, a...)
		}
	}
	order := make(chan int, requests)
	for range requests {
		order <- g.IntN(len(pool))
	}
	close(order)
	t0 := time.Now()
	var wg sync.WaitGroup
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 99))
			for i := range order {
				j := pool[i]
				switch x := r.IntN(10); {
				case x == 0: // leaves after the first chunk
					ctx, cancel := context.WithCancel(context.Background())
					s := c.Chat.Completions.NewStreaming(ctx, j.p)
					if s.Next() {
						cancel()
						for s.Next() {
						}
						left.Add(1)
					} else if err := s.Err(); err != nil {
						failf("request %d: a stream that was left: %v", i, err)
					}
					cancel()
					s.Close()
				case x < 5:
					s := c.Chat.Completions.NewStreaming(context.Background(), j.p)
					var text strings.Builder
					for s.Next() {
						for _, ch := range s.Current().Choices {
							text.WriteString(ch.Delta.Content)
						}
					}
					if err := s.Err(); err != nil {
						failf("request %d (streamed): %v", i, err)
					} else if text.String() != j.want {
						failf("request %d (streamed): %q, uncached %q", i, text.String(), j.want)
					}
					s.Close()
					done.Add(1)
				default:
					resp, err := c.Chat.Completions.New(context.Background(), j.p)
					if err != nil {
						var ae *openai.Error
						if errors.As(err, &ae) && ae.StatusCode == http.StatusTooManyRequests {
							failf("request %d: 429 with a queue as deep as the clients", i)
						} else {
							failf("request %d: %v", i, err)
						}
						continue
					}
					if got := resp.Choices[0].Message.Content; got != j.want {
						failf("request %d: %q, uncached %q", i, got, j.want)
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	sec := time.Since(t0).Seconds()
	if fails.Load() > 0 {
		t.Fatalf("%d of %d requests failed; the first: %v", fails.Load(), requests, firstErr)
	}
	if left.Load() == 0 || done.Load()+left.Load() != int64(requests) {
		t.Fatalf("%d completed, %d left mid-stream, of %d", done.Load(), left.Load(), requests)
	}
	body := get(t, url+"/metrics")
	if strings.Contains(body, `status="5`) {
		t.Fatalf("/metrics counts 5xx answers:\n%s", body)
	}
	// Idle connections hold goroutines of their own: close them first.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	after := settle()
	if after.heap > base.heap+cacheMB<<20+4<<20 || after.handlers > 0 {
		t.Fatalf("after the load: heap %d MiB, %d goroutines in the server; before: %d MiB (cache budget %d MiB)",
			after.heap>>20, after.handlers, base.heap>>20, cacheMB)
	}
	var h struct {
		Batch struct {
			Steps  int `json:"steps"`
			Shared int `json:"shared_steps"`
		} `json:"batch"`
	}
	if err := json.Unmarshal([]byte(get(t, url+"/health")), &h); err != nil || h.Batch.Shared == 0 {
		t.Fatalf("no decode step was batched with another slot's (%+v, %v)", h.Batch, err)
	}
	t.Logf("batched decode steps: %d of %d", h.Batch.Shared, h.Batch.Steps)
	t.Logf("%d requests (%d left mid-stream) from %d clients in %.1f s: %.1f requests/s; heap %d → %d MiB",
		requests, left.Load(), clients, sec, float64(requests)/sec, base.heap>>20, after.heap>>20)
}

// get returns the body of GET url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type usage struct {
	heap     uint64
	handlers int // goroutines running server or engine code
}

func heapAndGoroutines() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var dump strings.Builder
	pprof.Lookup("goroutine").WriteTo(&dump, 1)
	n := 0
	for _, g := range strings.Split(dump.String(), "\n\n") {
		if strings.Contains(g, "forge/server.") || strings.Contains(g, "forge/generate.") {
			n++
		}
	}
	return usage{heap: ms.HeapAlloc, handlers: n}
}

// settle measures until no goroutine runs server code (a handler may
// finish writing after its client has the answer), for at most 5 s.
func settle() usage {
	var u usage
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if u = heapAndGoroutines(); u.handlers == 0 {
			break
		}
	}
	return u
}
