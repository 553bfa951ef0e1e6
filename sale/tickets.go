package sale

import (
	"context"

	"github.com/boxoffice/boxoffice"
)

// MyTicketView is a ticket with its seat, for the owner's list.
type MyTicketView struct {
	TicketView
	Section    string
	Row        string
	Number     int
	PriceTier  string
	EventName  string
	Venue      string
	StartsAt   string
	Refundable bool
}

// MyTickets returns the user's valid tickets, newest first, with their
// seats and events.
func (s *Tickets) MyTickets(ctx context.Context, u boxoffice.User) ([]MyTicketView, error) {
	ts, err := s.store.UserTickets(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]MyTicketView, 0, len(ts))
	for i := range ts {
		v, err := s.myTicket(ctx, &ts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Ticket returns one ticket to its owner, or to an organiser or venue
// staff whose token covers its event (User.Oversees: unscoped staff see
// the result of a scan, not every ticket's code); anyone else gets
// ENOTFOUND.
func (s *Tickets) Ticket(ctx context.Context, u boxoffice.User, id boxoffice.ID) (MyTicketView, error) {
	t, err := s.store.Ticket(ctx, id)
	if err != nil {
		return MyTicketView{}, noSuch("ticket", err)
	}
	if t.UserID != u.ID && !u.Oversees(t.EventID) {
		return MyTicketView{}, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such ticket")
	}
	return s.myTicket(ctx, t)
}

func (s *Tickets) myTicket(ctx context.Context, t *boxoffice.Ticket) (MyTicketView, error) {
	l, err := s.Layout(ctx, t.EventID)
	if err != nil {
		return MyTicketView{}, err
	}
	st, _ := l.Seat(t.SeatID)
	return MyTicketView{TicketView: ticketView(t), Section: st.Section, Row: st.Row, Number: st.Number,
		PriceTier: st.PriceTier, EventName: l.Event.Name, Venue: l.Event.Venue,
		StartsAt: l.Event.StartsAt.UTC().Format(TimeFormat), Refundable: l.Event.RefundOpen(s.now())}, nil
}

// CheckIn admits the ticket with this code at the doors of eventID (0:
// any event), once; organisers and venue staff only. Errors: EFORBIDDEN,
// EINVALID (no code), ENOTFOUND (no ticket has it), ECONFLICT (a ticket
// of another event: not admitted), ETICKETVOID (resold or cancelled: the
// code admits nobody), ECHECKEDIN (admitted before).
func (s *Tickets) CheckIn(ctx context.Context, u boxoffice.User, eventID boxoffice.ID, code string) (MyTicketView, error) {
	if !u.CanCheckIn() {
		return MyTicketView{}, boxoffice.Errorf(boxoffice.EFORBIDDEN, "venue staff only")
	}
	if u.Scoped() {
		// A token for some events admits at their doors only.
		switch {
		case eventID == 0 && len(u.Events) == 1:
			eventID = u.Events[0]
		case eventID == 0:
			return MyTicketView{}, boxoffice.Errorf(boxoffice.EFORBIDDEN, "this token covers several events: name the event being checked in")
		case !u.InScope(eventID):
			return MyTicketView{}, boxoffice.Errorf(boxoffice.EFORBIDDEN, "this token does not cover event %s", eventID)
		}
	}
	if code == "" || len(code) > 64 {
		return MyTicketView{}, boxoffice.Errorf(boxoffice.EINVALID, "code must be 1-64 characters")
	}
	t, err := s.store.CheckIn(ctx, eventID, code, s.now())
	if err != nil {
		return MyTicketView{}, err
	}
	v, err := s.myTicket(ctx, t)
	v.Code = "" // the door has it already; the answer does not need to repeat it
	return v, err
}
