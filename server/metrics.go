package server

import (
	"net/http"

	"forge/generate"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series, in a registry of its own
// (two servers in one process do not share them).
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	promptTokens  prometheus.Counter
	genTokens     prometheus.Counter
	cachedTokens  prometheus.Counter
	cacheHits     prometheus.Counter
	prefillTPS    prometheus.Histogram
	decodeTPS     prometheus.Histogram
	queue, active prometheus.Gauge

	// Speculative decoding (Options.Draft).
	drafted, kept, targetCalls prometheus.Counter
	draftFailures              prometheus.Counter
	keptPerRound               prometheus.Histogram
	seconds                    *prometheus.CounterVec // by part: draft, verify, sample
}

// newMetrics registers the series, with the prompt cache's (if any) and
// speculative decoding's (if draft).
func newMetrics(cache *generate.Cache, draft bool) *metrics {
	buckets := prometheus.ExponentialBuckets(1, 2, 16) // 1 … 32768 tokens/s
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forge_requests_total",
			Help: "HTTP requests by route and status."}, []string{"route", "status"}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_prompt_tokens_total", Help: "Prompt tokens of finished replies."}),
		genTokens:    prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_generated_tokens_total", Help: "Tokens generated."}),
		cachedTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_cache_reused_tokens_total", Help: "Prompt tokens reused from a slot's snapshot or the prompt cache."}),
		cacheHits:    prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_cache_hits_total", Help: "Replies that reused part of their prompt."}),
		prefillTPS: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forge_prefill_tokens_per_second",
			Help: "Prefill speed per reply (prompt tokens run, cached ones excluded).", Buckets: buckets}),
		decodeTPS: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forge_decode_tokens_per_second",
			Help: "Decode speed per reply.", Buckets: buckets}),
		queue:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "forge_queue_length", Help: "Requests waiting for a slot."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "forge_active_slots", Help: "Slots generating a reply."}),
	}
	m.reg.MustRegister(m.requests, m.promptTokens, m.genTokens, m.cachedTokens, m.cacheHits,
		m.prefillTPS, m.decodeTPS, m.queue, m.active)
	if draft {
		m.drafted = prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_draft_tokens_total", Help: "Tokens the drafter proposed."})
		m.kept = prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_draft_kept_tokens_total", Help: "Drafted tokens the target kept."})
		m.targetCalls = prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_target_calls_total",
			Help: "Forwards of the target after prefill (verify blocks and plain steps)."})
		m.draftFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "forge_draft_failures_total",
			Help: "Replies whose drafter failed (they went on by plain decoding)."})
		m.keptPerRound = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forge_draft_kept_per_round",
			Help: "Drafts kept per verify block.", Buckets: prometheus.LinearBuckets(0, 1, 17)})
		m.seconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forge_speculative_seconds_total",
			Help: "Time of speculative decoding by part: drafting, verify blocks and plain steps, deciding and sampling."}, []string{"part"})
		m.reg.MustRegister(m.drafted, m.kept, m.targetCalls, m.draftFailures, m.keptPerRound, m.seconds)
	}
	if cache != nil {
		stat := func(f func(generate.CacheStats) float64) func() float64 {
			return func() float64 { return f(cache.Stats()) }
		}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "forge_prompt_cache_bytes", Help: "Memory held by prompt cache snapshots."},
				stat(func(s generate.CacheStats) float64 { return float64(s.Bytes) })),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "forge_prompt_cache_entries", Help: "Prompt cache snapshots."},
				stat(func(s generate.CacheStats) float64 { return float64(s.Entries) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "forge_prompt_cache_lookups_hit_total", Help: "Prompt cache lookups that found a snapshot."},
				stat(func(s generate.CacheStats) float64 { return float64(s.Hits) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "forge_prompt_cache_evictions_total", Help: "Prompt cache snapshots evicted to stay within the budget."},
				stat(func(s generate.CacheStats) float64 { return float64(s.Evictions) })))
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
