package httpapi

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
)

// The use cases the API serves, declared here where they are used, each
// with the methods its handlers call: the server depends on these, not on
// a concrete service. A node gives it a *sale.Service, which has them all.

// Catalog creates and reads events.
type Catalog interface {
	CreateEvent(ctx context.Context, u boxoffice.User, e *boxoffice.Event) (*boxoffice.Event, error)
	Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error)
	Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error)
	Layout(ctx context.Context, id boxoffice.ID) (*layout.Layout, error)
}

// Bookings reserves (held at once, or queued: Request decides by the
// event), confirms and releases.
type Bookings interface {
	Request(ctx context.Context, u boxoffice.User, req sale.ReserveRequest) (sale.Reservation, error)
	Booking(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*boxoffice.Booking, error)
	View(b *boxoffice.Booking) *sale.BookingView
	Confirm(ctx context.Context, u boxoffice.User, req sale.ConfirmRequest) (*sale.Confirmation, error)
	Release(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*boxoffice.Booking, error)
}

// Queue is a queued sale's front door, its status and its draw.
type Queue interface {
	QueueStatus(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*sale.QueueTicket, error)
	QueueRate(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, float64, error)
	Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error)
}

// Waitlist is an event's waitlist.
type Waitlist interface {
	JoinWaitlist(ctx context.Context, u boxoffice.User, req sale.JoinRequest) (*sale.WaitlistView, error)
	WaitlistEntry(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*sale.WaitlistView, error)
	MyWaitlist(ctx context.Context, u boxoffice.User) ([]*sale.WaitlistView, error)
	LeaveWaitlist(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*sale.WaitlistView, error)
}

// Resale is fan-to-fan resale.
type Resale interface {
	ListTicket(ctx context.Context, u boxoffice.User, req sale.ListRequest) (*sale.ListingView, error)
	Listing(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*sale.ListingView, error)
	EventListings(ctx context.Context, eventID boxoffice.ID) ([]*sale.ListingView, error)
	MyListings(ctx context.Context, u boxoffice.User) ([]*sale.ListingView, error)
	WithdrawListing(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*sale.ListingView, error)
	MyPayouts(ctx context.Context, u boxoffice.User) ([]sale.PayoutView, error)
}

// Tickets reads tickets, checks them in and cancels bookings.
type Tickets interface {
	MyTickets(ctx context.Context, u boxoffice.User) ([]sale.MyTicketView, error)
	Ticket(ctx context.Context, u boxoffice.User, id boxoffice.ID) (sale.MyTicketView, error)
	CheckIn(ctx context.Context, u boxoffice.User, eventID boxoffice.ID, code string) (sale.MyTicketView, error)
	Cancel(ctx context.Context, u boxoffice.User, req sale.CancelRequest) (*sale.Cancellation, error)
}

// Health answers /readyz.
type Health interface {
	Ready(ctx context.Context) error
}

// UseCases is every use case the API serves.
type UseCases interface {
	Catalog
	Bookings
	Queue
	Waitlist
	Resale
	Tickets
	Health
}

// SeatMaps serves the seat-map snapshots (seatmap.Cache).
type SeatMaps interface {
	Get(ctx context.Context, eventID boxoffice.ID) (*seatmap.Snapshot, error)
	Age(s *seatmap.Snapshot) time.Duration
	TTLOf(s *seatmap.Snapshot) time.Duration
}

var (
	_ UseCases = (*sale.Service)(nil)
	_ SeatMaps = (*seatmap.Cache)(nil)
)
