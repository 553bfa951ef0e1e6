// Package metrics is boxoffice's Prometheus adapter: the HTTP front
// door's request counts and latencies by route, the sale's own counts
// (holds, bookings, payments, the queue, the database's guards, outages by
// port: sale.go), and the Go runtime's and the process's own figures, on a
// registry of its own served at /metrics. docs/operations.md says what
// each means; deploy/ has the alert rules and a dashboard.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds the metrics of one process.
type Registry struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	sale     *saleMetrics
}

// New returns a registry with the HTTP metrics and the Go and process
// collectors.
func New() *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		// Buckets from 0.5 ms: a cached seat map or a 202 is answered in
		// about a millisecond; a slow payment takes seconds.
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "boxoffice_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern (streams excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}, []string{"route"}),
		sale: newSaleMetrics(),
	}
	r.reg.MustRegister(r.sale.collectors()...)
	r.reg.MustRegister(r.requests, r.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Gauge adds a gauge read by calling fn at each scrape (fn must be quick
// and safe for concurrent use).
func (r *Registry) Gauge(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// SeatCounts is a source of seat counts by event: it calls yield for each
// event being sold now with its seats per status.
type SeatCounts func(yield func(eventID string, counts map[string]int))

// Seats adds boxoffice_seats{event,status}, read from src at each scrape.
// Its events are those src yields (the seat maps being read now), so the
// series stay bounded by the seat-map cache and go away with the sale.
func (r *Registry) Seats(src SeatCounts) {
	r.reg.MustRegister(seatsCollector{src})
}

var seatsDesc = prometheus.NewDesc("boxoffice_seats",
	"Seats of the events whose seat maps this process serves now, by status (available, held, sold, resale), as of the last snapshot (at most the seat-map TTL old).",
	[]string{"event", "status"}, nil)

type seatsCollector struct{ src SeatCounts }

func (c seatsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- seatsDesc }

func (c seatsCollector) Collect(ch chan<- prometheus.Metric) {
	c.src(func(event string, counts map[string]int) {
		for status, n := range counts {
			ch <- prometheus.MustNewConstMetric(seatsDesc, prometheus.GaugeValue, float64(n), event, status)
		}
	})
}

// QueueDepths is a source of the queues of the sales being served: it
// calls yield for each with the requests queued (a position given, not
// decided yet), waiting in the pre-queue, and the drain rate measured.
type QueueDepths func(yield func(eventID string, queued, waiting int64, rate float64))

// Queues adds boxoffice_queue_depth{event,state} and
// boxoffice_queue_drain_rate{event}, read from src at each scrape; as with
// Seats, only the events src yields (the sales being served now) have
// series.
func (r *Registry) Queues(src QueueDepths) {
	r.reg.MustRegister(queuesCollector{src})
}

var (
	queueDepthDesc = prometheus.NewDesc("boxoffice_queue_depth",
		"Requests in the queue of a sale this process answers for now: queued (given a position, not decided yet) or waiting (in the pre-queue, before the draw).",
		[]string{"event", "state"}, nil)
	queueRateDesc = prometheus.NewDesc("boxoffice_queue_drain_rate",
		"Requests/s the workers decide for the event's queue, as the wait estimates measure it (0 until measured).",
		[]string{"event"}, nil)
)

type queuesCollector struct{ src QueueDepths }

func (c queuesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueRateDesc
}

func (c queuesCollector) Collect(ch chan<- prometheus.Metric) {
	c.src(func(event string, queued, waiting int64, rate float64) {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(queued), event, "queued")
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(waiting), event, "waiting")
		ch <- prometheus.MustNewConstMetric(queueRateDesc, prometheus.GaugeValue, rate, event)
	})
}

// ObserveRequest counts one answered request; d is left out for streams
// (negative), whose duration says nothing about the server's speed.
func (r *Registry) ObserveRequest(route, method string, status int, d time.Duration) {
	r.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	if d >= 0 {
		r.duration.WithLabelValues(route).Observe(d.Seconds())
	}
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}
