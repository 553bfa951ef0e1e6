package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
)

type sectionJSON struct {
	Name        string `json:"name"`
	PriceTier   string `json:"price_tier"`
	PriceCents  int64  `json:"price_cents"`
	Rows        int    `json:"rows"`
	SeatsPerRow int    `json:"seats_per_row"`
	// Seats with features, "<row>-<number>" → features.
	Features map[string][]boxoffice.SeatFeature `json:"features,omitempty"`
}

// eventRequest is the body of POST /events.
type eventRequest struct {
	Name        string        `json:"name"`
	Venue       string        `json:"venue"`
	StartsAt    string        `json:"starts_at"`
	SaleOpensAt string        `json:"sale_opens_at"`
	SaleMode    string        `json:"sale_mode"`
	TicketLimit int           `json:"ticket_limit"`
	Sections    []sectionJSON `json:"sections"`
	// RefundCutoffHours, when given, makes bookings refundable until that
	// many hours before the show; absent, they are not.
	RefundCutoffHours *int `json:"refund_cutoff_hours"`
	// ResaleEnabled (default true) and ResaleCapPercent (of face value;
	// absent or 0 means no cap) set the resale rules.
	ResaleEnabled    *bool `json:"resale_enabled"`
	ResaleCapPercent int   `json:"resale_cap_percent"`
}

type eventJSON struct {
	EventID     boxoffice.ID  `json:"event_id"`
	Name        string        `json:"name"`
	Venue       string        `json:"venue"`
	StartsAt    string        `json:"starts_at"`
	SaleOpensAt string        `json:"sale_opens_at"`
	SaleMode    string        `json:"sale_mode"`
	TicketLimit int           `json:"ticket_limit"`
	SeatCount   int           `json:"seat_count"`
	Sections    []sectionJSON `json:"sections"`
	CreatedAt   string        `json:"created_at"`
	SeatsURL    string        `json:"seats_url"`
	// RefundCutoffHours is null when bookings are not refundable.
	RefundCutoffHours *int `json:"refund_cutoff_hours"`
	ResaleEnabled     bool `json:"resale_enabled"`
	ResaleCapPercent  int  `json:"resale_cap_percent,omitempty"`
}

func eventView(e *boxoffice.Event) eventJSON {
	v := eventJSON{EventID: e.ID, Name: e.Name, Venue: e.Venue, StartsAt: formatTime(e.StartsAt),
		SaleOpensAt: formatTime(e.SaleOpensAt), SaleMode: string(e.SaleMode), TicketLimit: e.TicketLimit,
		SeatCount: e.SeatCount(), CreatedAt: formatTime(e.CreatedAt), SeatsURL: "/events/" + e.ID.String() + "/seats",
		ResaleEnabled: !e.ResaleDisabled, ResaleCapPercent: e.ResaleCapPercent}
	if e.Refundable {
		h := e.RefundCutoffHours
		v.RefundCutoffHours = &h
	}
	for _, s := range e.Sections {
		v.Sections = append(v.Sections, sectionJSON(s))
	}
	return v
}

// toEvent turns the request into a domain event; Validate does the rest.
func (q *eventRequest) toEvent() (*boxoffice.Event, error) {
	parse := func(field, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, boxoffice.Errorf(boxoffice.EINVALID, "%s is required", field)
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, boxoffice.Errorf(boxoffice.EINVALID, "%s must be an RFC 3339 time such as 2027-06-01T20:00:00Z", field)
		}
		return t.UTC(), nil
	}
	starts, err := parse("starts_at", q.StartsAt)
	if err != nil {
		return nil, err
	}
	opens, err := parse("sale_opens_at", q.SaleOpensAt)
	if err != nil {
		return nil, err
	}
	e := &boxoffice.Event{Name: q.Name, Venue: q.Venue, StartsAt: starts, SaleOpensAt: opens,
		SaleMode: boxoffice.SaleMode(q.SaleMode), TicketLimit: q.TicketLimit, ResaleCapPercent: q.ResaleCapPercent,
		ResaleDisabled: q.ResaleEnabled != nil && !*q.ResaleEnabled}
	if q.RefundCutoffHours != nil {
		e.Refundable, e.RefundCutoffHours = true, *q.RefundCutoffHours
	}
	if e.TicketLimit == 0 {
		e.TicketLimit = boxoffice.DefaultTicketLimit
	}
	if len(q.Sections) > boxoffice.MaxSections {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "at most %d sections", boxoffice.MaxSections)
	}
	for _, s := range q.Sections {
		e.Sections = append(e.Sections, boxoffice.Section(s))
	}
	return e, e.Validate()
}

func (s *Server) createEvent(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	var q eventRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	e, err := q.toEvent()
	if err != nil {
		return err
	}
	if e, err = s.svc.CreateEvent(r.Context(), u, e); err != nil {
		return err
	}
	w.Header().Set("Location", "/events/"+e.ID.String())
	writeJSON(w, http.StatusCreated, eventView(e))
	return nil
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	id, err := pathID(r, "event_id")
	if err != nil {
		return err
	}
	e, err := s.svc.Event(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventView(e))
	return nil
}

// maxEventPage is the most events one GET /events answers (and its default).
const maxEventPage = 100

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	var f boxoffice.EventFilter
	if v := r.URL.Query().Get("before"); v != "" {
		id, err := boxoffice.ParseID(v)
		if err != nil {
			return boxoffice.Errorf(boxoffice.EINVALID, "before must be an event id")
		}
		f.Before = id
	}
	f.Limit = maxEventPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEventPage {
			return boxoffice.Errorf(boxoffice.EINVALID, "limit must be between 1 and %d", maxEventPage)
		}
		f.Limit = n
	}
	es, err := s.svc.Events(r.Context(), f)
	if err != nil {
		return err
	}
	out := struct {
		Events     []eventJSON   `json:"events"`
		NextBefore *boxoffice.ID `json:"next_before,omitempty"`
		Next       string        `json:"next,omitempty"`
	}{Events: []eventJSON{}}
	for _, e := range es {
		out.Events = append(out.Events, eventView(e))
	}
	if len(es) == f.Limit {
		// A full page: there may be more. The cursor, the URL of the next
		// page, and the same as a Link header.
		last := es[len(es)-1].ID
		out.NextBefore = &last
		out.Next = "/events?before=" + last.String() + "&limit=" + strconv.Itoa(f.Limit)
		w.Header().Set("Link", "<"+out.Next+">; rel=\"next\"")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
