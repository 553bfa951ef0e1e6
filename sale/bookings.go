package sale

import (
	"context"

	"github.com/boxoffice/boxoffice"
)

// BookingView is a booking as its owner sees it.
type BookingView struct {
	BookingID        boxoffice.ID
	EventID          boxoffice.ID
	UserID           string
	Status           string
	SeatIDs          []string
	AmountCents      int64
	HeldUntil        string
	PaymentURL       string
	ConfirmationCode string
	Tickets          []TicketView
	CreatedAt        string
	// ListingID marks a resale purchase, WaitlistEntryID a waitlist offer.
	ListingID       boxoffice.ID
	WaitlistEntryID boxoffice.ID
}

// View renders a booking with its status as of now.
func (s *Bookings) View(b *boxoffice.Booking) *BookingView {
	now := s.now()
	st := b.EffectiveStatus(now)
	v := &BookingView{BookingID: b.ID, EventID: b.EventID, UserID: b.UserID, Status: string(st),
		SeatIDs: b.SeatIDs, AmountCents: b.AmountCents, ConfirmationCode: b.ConfirmationCode,
		CreatedAt: b.CreatedAt.UTC().Format(TimeFormat)}
	if st == boxoffice.BookingPending {
		v.HeldUntil = b.HeldUntil.UTC().Format(TimeFormat)
		v.PaymentURL = PaymentURL(b.ID)
	}
	if st == boxoffice.BookingConfirmed || st == boxoffice.BookingCancelled {
		v.Tickets = confirmationOf(b).Tickets
	}
	v.ListingID, v.WaitlistEntryID = b.ListingID, b.WaitlistEntryID
	return v
}

// TimeFormat is how the API writes times: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Booking returns a booking its owner (or an admin) may see; anyone else
// gets ENOTFOUND, so ids of other users' bookings reveal nothing.
func (s *Bookings) Booking(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := s.store.Booking(ctx, id)
	if err != nil {
		return nil, noSuch("booking", err)
	}
	if b.UserID != u.ID && !(u.IsAdmin() && u.InScope(b.EventID)) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such booking")
	}
	return b, nil
}

// ownBooking is Booking for changes: only the owner, not even an admin,
// may confirm or release a hold.
func ownBooking(ctx context.Context, store bookingReader, u boxoffice.User, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := store.Booking(ctx, id)
	if err != nil {
		return nil, noSuch("booking", err)
	}
	if b.UserID != u.ID {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such booking")
	}
	return b, nil
}

// Release gives a pending booking's seats back. Releasing a booking that is
// already released or expired returns it as it is (DELETE is idempotent);
// a confirmed booking cannot be released (ECONFLICT).
func (s *Bookings) Release(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := ownBooking(ctx, s.store, u, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch b.Status {
	case boxoffice.BookingReleased, boxoffice.BookingExpired:
		return b, nil
	case boxoffice.BookingConfirmed:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "a confirmed booking cannot be released")
	}
	to := boxoffice.BookingReleased
	if b.EffectiveStatus(now) == boxoffice.BookingExpired {
		to = boxoffice.BookingExpired
	}
	// The database first: once it says released, no confirm can win; then
	// the lock layer, with check-and-delete so a newer holder is untouched.
	nb, err := s.store.ReleaseBooking(ctx, id, to, now)
	if isCode(err, boxoffice.ECONFLICT) {
		if nb, err = s.store.Booking(ctx, id); err == nil && nb.Status == boxoffice.BookingConfirmed {
			return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "a confirmed booking cannot be released")
		}
		return nb, err
	}
	if err != nil {
		return nil, err
	}
	s.returns.returnSeats(ctx, nb)
	return nb, nil
}

// noSuch is a store's ENOTFOUND in the words used for someone else's
// object, so that an answer never tells which ids exist.
func noSuch(what string, err error) error {
	if isCode(err, boxoffice.ENOTFOUND) {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no such %s", what)
	}
	return err
}
