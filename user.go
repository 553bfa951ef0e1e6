package boxoffice

import (
	"slices"
	"time"
)

// Roles. RoleAdmin is the organiser; RoleStaff works the venue's doors
// (check-in); any other role is a customer.
const (
	RoleAdmin = "admin"
	RoleStaff = "staff"
)

// User is an authenticated caller.
type User struct {
	ID   string
	Role string
	// Events scopes an organiser's or staff token to these events (its
	// "events" claim); empty: every event for an organiser, and for staff
	// check-in alone.
	Events []ID
	// Expires is when the token ends (zero: never, as a test's user):
	// a stream opened with it ends then too.
	Expires time.Time
}

// Scoped reports whether the token names the events it may act on.
func (u User) Scoped() bool { return len(u.Events) > 0 }

// InScope reports whether the token may act on eventID: it names it, or
// names no event at all.
func (u User) InScope(eventID ID) bool {
	return len(u.Events) == 0 || slices.Contains(u.Events, eventID)
}

// Oversees reports whether the user may read others' objects of eventID:
// an organiser in scope, or staff whose token names the event (unscoped
// staff see only the result of a scan).
func (u User) Oversees(eventID ID) bool {
	switch u.Role {
	case RoleAdmin:
		return u.InScope(eventID)
	case RoleStaff:
		return u.Scoped() && u.InScope(eventID)
	}
	return false
}

// IsAdmin reports whether the user is an organiser.
func (u User) IsAdmin() bool { return u.Role == RoleAdmin }

// CanCheckIn reports whether the user may admit tickets at the venue.
func (u User) CanCheckIn() bool { return u.Role == RoleAdmin || u.Role == RoleStaff }
