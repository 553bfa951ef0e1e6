package sale

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/snowflake"
)

// CreateEvent validates and stores a new event; admins only. A zero
// TicketLimit takes the default. Errors: EFORBIDDEN, EINVALID.
func (s *Catalog) CreateEvent(ctx context.Context, u boxoffice.User, e *boxoffice.Event) (*boxoffice.Event, error) {
	if !u.IsAdmin() {
		return nil, boxoffice.Errorf(boxoffice.EFORBIDDEN, "only organisers may create events")
	}
	if e.TicketLimit == 0 {
		e.TicketLimit = boxoffice.DefaultTicketLimit
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	// Dates the layout alone cannot judge: a show already begun would be
	// on sale to nobody, one decades away is a typo.
	now := s.now()
	if !e.StartsAt.After(now) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "starts_at must be in the future")
	}
	if e.StartsAt.After(now.AddDate(boxoffice.MaxYearsAhead, 0, 0)) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "starts_at must be within %d years", boxoffice.MaxYearsAhead)
	}
	e.CreatedAt = s.now()
	if e.SaleMode == boxoffice.SaleQueued {
		// The pre-queue draw's seed, committed to from now on (draw.go).
		e.DrawSeed = boxoffice.NewDrawSeed()
	}
	// The id's time part is on the show's day, so that the stores can keep
	// a month of shows together (and archive it) by id range alone. Two
	// events of one show day may draw the same id (snowflake.OnDay): the
	// store says ECONFLICT, and an id minted a millisecond later differs.
	for attempt := 0; ; attempt++ {
		id, err := s.ids.NextID()
		if err != nil {
			return nil, err
		}
		e.ID = snowflake.OnDay(id, e.StartsAt)
		err = s.store.CreateEvent(ctx, e)
		if boxoffice.ErrorCode(err) == boxoffice.ECONFLICT && attempt < 8 {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	e.DrawSeed = nil // secret until the draw: kept by the store alone
	s.layouts.Add(layout.Of(e))
	s.openMarks(ctx, e)
	return e, nil
}

// openMarks tells a lock layer with marks of grants that the new event's
// seats were never held, so that its refused direct reserves need no
// idempotency look-up from the start (boxoffice.LeasedHolds.OpenMarks).
// They are kept until a day after the show, and as long as the marks
// after that; a failure only costs the look-ups until the lock layer's
// own ledger vouches.
func (s *core) openMarks(ctx context.Context, e *boxoffice.Event) {
	lh, ok := s.holds.(boxoffice.LeasedHolds)
	if !ok {
		return
	}
	sections := make([]string, len(e.Sections))
	for i, sec := range e.Sections {
		sections[i] = sec.Name
	}
	keep := e.StartsAt.Sub(s.now()) + 24*time.Hour + s.markTTL()
	if err := lh.OpenMarks(ctx, e.ID, sections, keep); err != nil {
		s.log.WarnContext(ctx, "open the marks of grants", "event", e.ID, "err", err)
	}
}

// Event returns one event. ENOTFOUND if there is none.
func (s *Catalog) Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	l, err := s.Layout(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.Event, nil
}

// MaxEventsPage bounds one page of the event list.
const MaxEventsPage = 100

// Events lists events by show start, latest first.
func (s *Catalog) Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error) {
	if f.Limit <= 0 || f.Limit > MaxEventsPage {
		f.Limit = MaxEventsPage
	}
	return s.store.Events(ctx, f)
}
