// Package httpapi is the HTTP face of boxoffice: the fixed contract
// (openapi.json), problem+json errors, bearer-token auth. Handlers are
// thin: decode, call a use case (usecases.go), map its outcome to the wire
// (answers.go).
package httpapi

import (
	_ "embed"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/internal/inflight"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/tracing"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document served at /openapi.json.
func OpenAPI() []byte { return openAPI }

// Server routes requests to the service.
type Server struct {
	svc     UseCases
	seats   SeatMaps
	auth    *auth.Authenticator
	log     *slog.Logger
	handler http.Handler
	hub     *hub
	// users and addrs are the front door's rate limits (SetLimits); nil
	// is off.
	users, addrs *limiters
	// reads limits each user's GETs (SetLimits); nil is off.
	reads *limiters
	// streams counts the live streams, capped by SetLimits' caps.
	streams streamCount
	// observer, if set, hears of every answered request (Observe).
	observer RequestObserver
	// layouts caches each event's encoded layout (immutable).
	layouts sync.Map // boxoffice.ID → *layoutJSON
	// gate admits at most cap(gate) requests into the handlers at once
	// (SetLimits' InFlight); nil is no bound. waiting counts those
	// waiting at it.
	gate    chan struct{}
	waiting atomic.Int64
}

// access says who may call a route.
type access int

const (
	public   access = iota // anyone; a bad token is still refused
	customer               // any valid token
	streamer               // any valid token, which may also come as ?access_token= (EventSource sends no headers)
	admin                  // a token with role admin
	staff                  // a token with role admin or staff (the venue's doors)
)

// Route is one entry of the route table; the OpenAPI test walks it.
type Route struct {
	Method, Pattern string
	access          access
	handle          func(w http.ResponseWriter, r *http.Request, u boxoffice.User) error
}

// New returns a Server.
func New(svc UseCases, seats SeatMaps, a *auth.Authenticator, log *slog.Logger) *Server {
	s := &Server{svc: svc, seats: seats, auth: a, log: log, hub: newHub()}
	mux := http.NewServeMux()
	for _, rt := range s.Routes() {
		mux.Handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such endpoint"))
	})
	s.handler = noSniff(s.recoverer(methodNotAllowed(mux)))
	return s
}

// noSniff tells browsers to take every answer for the type it says: a
// JSON body never runs as a script or a page.
func noSniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// Routes is the route table.
func (s *Server) Routes() []Route {
	return []Route{
		{"GET", "/healthz", public, s.healthz},
		{"GET", "/readyz", public, s.readyz},
		{"GET", "/openapi.json", public, s.openapi},
		{"GET", "/events", public, s.listEvents},
		{"POST", "/events", admin, s.createEvent},
		{"GET", "/events/{event_id}", public, s.getEvent},
		{"GET", "/events/{event_id}/seats", public, s.getSeats},
		{"GET", "/events/{event_id}/availability", public, s.getAvailability},
		{"GET", "/events/{event_id}/layout", public, s.getLayout},
		{"GET", "/events/{event_id}/stats", admin, s.eventStats},
		{"GET", "/events/{event_id}/draw", public, s.getDraw},
		{"GET", "/events/{event_id}/draw/order", public, s.getDrawOrder},
		{"POST", "/bookings/reserve", customer, s.reserve},
		{"GET", "/bookings/{booking_id}", customer, s.getBooking},
		{"POST", "/bookings/{booking_id}/confirm", customer, s.confirm},
		{"DELETE", "/bookings/{booking_id}", customer, s.release},
		{"POST", "/bookings/{booking_id}/cancel", customer, s.cancelBooking},
		{"GET", "/queue/{request_id}", customer, s.queueStatus},
		{"GET", "/queue/{request_id}/events", streamer, s.queueEvents},
		{"POST", "/events/{event_id}/waitlist", customer, s.joinWaitlist},
		{"GET", "/waitlist/{entry_id}", customer, s.getWaitlistEntry},
		{"DELETE", "/waitlist/{entry_id}", customer, s.leaveWaitlist},
		{"GET", "/waitlist/{entry_id}/events", streamer, s.waitlistEvents},
		{"GET", "/me/waitlist", customer, s.myWaitlist},
		{"GET", "/me/tickets", customer, s.myTickets},
		{"GET", "/tickets/{ticket_id}", customer, s.getTicket},
		{"GET", "/tickets/{ticket_id}/qr.svg", customer, s.ticketQR},
		{"POST", "/tickets/{ticket_id}/listing", customer, s.listTicket},
		{"GET", "/events/{event_id}/listings", public, s.eventListings},
		{"GET", "/listings/{listing_id}", public, s.getListing},
		{"DELETE", "/listings/{listing_id}", customer, s.withdrawListing},
		{"GET", "/me/listings", customer, s.myListings},
		{"GET", "/me/payouts", customer, s.myPayouts},
		{"POST", "/checkin", staff, s.checkIn},
	}
}

// probe reports whether rt is a health probe: answered at once, never
// behind the work a busy process has waiting (InFlight), or a load
// balancer would take a busy process for a dead one.
func (rt Route) probe() bool { return rt.Pattern == "/healthz" || rt.Pattern == "/readyz" }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// wrap applies auth to a route and turns its error into a problem.
func (s *Server) wrap(rt Route) http.Handler {
	name := rt.Method + " " + rt.Pattern
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A span per request, continuing the caller's trace (traceparent);
		// its id goes back in X-Trace-Id, so a buyer's support ticket
		// leads to the logs of every process the request crossed.
		// With traces off and no traceparent, there is nothing to carry.
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		if len(r.Header["Traceparent"]) > 0 || tracing.Active(r.Context()) {
			ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.route", rt.Pattern), attribute.String("http.request.method", rt.Method)))
			defer span.End()
			if id := tracing.TraceID(ctx); id != "" {
				w.Header().Set("X-Trace-Id", id)
			}
			r = r.WithContext(ctx)
			defer func() {
				span.SetAttributes(attribute.Int("http.response.status_code", rec.status))
				if rec.status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(rec.status))
				}
			}()
		}
		w = rec
		if s.observer != nil {
			start := time.Now()
			defer func() {
				d := time.Since(start)
				if rt.access == streamer {
					d = -1 // a stream's length is the client's, not the server's speed
				}
				s.observer.ObserveRequest(rt.Pattern, rt.Method, rec.status, d)
			}()
		}
		if s.gate != nil && rt.access != streamer && !rt.probe() {
			// The rest wait here in arrival order (a channel's senders
			// are served first come, first served) instead of in the
			// scheduler's run queues, where each blocking step of a
			// request waits behind every other request's.
			s.waiting.Add(1)
			select {
			case s.gate <- struct{}{}:
				s.waiting.Add(-1)
				ctx, place := inflight.With(r.Context(), func() { <-s.gate })
				r = r.WithContext(ctx)
				defer place.Leave()
			case <-r.Context().Done():
				s.waiting.Add(-1)
				rec.status = 499 // the client is gone: counted as such, nothing written
				return
			}
		}
		u, err := s.authenticate(r, rt.access)
		if err == nil {
			err = s.limit(r, u)
		}
		if err == nil {
			err = rt.handle(w, r, u)
		}
		if err != nil {
			writeError(w, r, s.log, err)
		}
	})
}

// authenticate checks the bearer token. A token that is present but bad
// is refused on every route, public ones included: a client with a broken
// or expired token should hear so rather than be served anonymously.
func (s *Server) authenticate(r *http.Request, need access) (boxoffice.User, error) {
	h := r.Header.Get("Authorization")
	if t := r.URL.Query().Get("access_token"); h == "" && t != "" && need == streamer {
		h = "Bearer " + t
	}
	if h == "" {
		if need == public {
			return boxoffice.User{}, nil
		}
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "a bearer token is required")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "use Authorization: Bearer <token>")
	}
	u, err := s.auth.Verify(strings.TrimSpace(token))
	if err != nil {
		return boxoffice.User{}, err
	}
	if need == admin && !u.IsAdmin() {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EFORBIDDEN, "organisers only")
	}
	if need == staff && !u.CanCheckIn() {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EFORBIDDEN, "venue staff only")
	}
	return u, nil
}

// recoverer turns a panic into a logged 500 problem instead of a dropped
// connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeError(w, r, s.log, boxoffice.Errorf(boxoffice.EINTERNAL, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// methodNotAllowed rewrites the mux's plain-text 405 as a problem.
func methodNotAllowed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "/" {
			// Only the catch-all matched: an unknown path, or a known path
			// with another method. Probe the methods we serve to tell which.
			var allow []string
			for _, m := range []string{"GET", "POST", "DELETE"} {
				probe := r.Clone(r.Context())
				probe.Method = m
				if _, p := mux.Handler(probe); p != "" && p != "/" {
					allow = append(allow, m)
				}
			}
			if len(allow) > 0 {
				if slices.Contains(allow, "GET") {
					allow = append(allow, "HEAD")
				}
				w.Header().Set("Allow", strings.Join(allow, ", "))
				if r.Method == http.MethodOptions {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				writeError(w, r, slog.Default(), &boxoffice.Error{Code: codeMethod, Message: r.Method + " is not allowed here"})
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	if err := s.svc.Ready(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPI)
	return nil
}

func pathID(r *http.Request, name string) (boxoffice.ID, error) {
	id, err := boxoffice.ParseID(r.PathValue(name))
	if err != nil {
		return 0, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such %s", strings.TrimSuffix(name, "_id"))
	}
	return id, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(sale.TimeFormat) }

// RequestObserver hears of every answered API request: its route pattern
// (bounded, unlike paths), method, status and how long it took (negative
// for streams). metrics.Registry is one.
type RequestObserver interface {
	ObserveRequest(route, method string, status int, d time.Duration)
}

// Observe reports every answered request to o; call it before serving.
func (s *Server) Observe(o RequestObserver) { s.observer = o }

// statusRecorder remembers the status a handler wrote. Unwrap lets
// http.ResponseController reach the connection (streams flush and set
// deadlines through it).
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
