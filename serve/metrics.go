package serve

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolret/toolret/toolindex/store"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(st *store.Store) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolret_http_requests_total", Help: "HTTP requests answered, by route and status code.",
	}, []string{"route", "code"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolret_http_request_errors_total", Help: "HTTP requests answered with a 4xx or 5xx status, by route and status code.",
	}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "toolret_http_request_duration_seconds", Help: "Time from request to response, by route.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(m.requests, m.errors, m.latency,
		gauge("toolret_index_tools", "Tools in the served library.", func() float64 { return float64(st.R.Library().Len()) }),
		gauge("toolret_index_dim", "Embedding dimension of the index.", func() float64 { return float64(st.R.Dim()) }),
		gauge("toolret_library_version", "Version of the served tool library (updates since the export).", func() float64 { return float64(st.R.Library().Version) }),
		gauge("toolret_update_log_records", "Tool updates in the log, not yet compacted into the index.", func() float64 { return float64(st.Pending()) }),
		counter("toolret_tool_updates_total", "Tools put or deleted since the server started.", func() float64 { return float64(st.Updates()) }),
		counter("toolret_compactions_total", "Compactions of the update log into the index since the server started.", func() float64 { return float64(st.Compactions()) }),
		counter("toolret_compaction_errors_total", "Failed compactions (their updates stay in the log).", func() float64 { n, _ := st.CompactionError(); return float64(n) }),
		gauge("toolret_store_up", "1 while the store takes tool updates (a shared library: its PostgreSQL reachable), else 0.", func() float64 { return up(st.StoreErr()) }),
		counter("toolret_replicated_updates_total", "Updates committed by other replicas and applied by this one (a library shared through PostgreSQL).", func() float64 { return float64(st.Applied()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, code).Inc()
	if status >= 400 {
		m.errors.WithLabelValues(route, code).Inc()
	}
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func up(err error) float64 {
	if err != nil {
		return 0
	}
	return 1
}
