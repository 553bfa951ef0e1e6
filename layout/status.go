package layout

// Status is a seat's state on the seat map, in one byte: the letter the
// compact view uses. A map of 70,000 seats is 70 KB of statuses, not the
// 1.1 MB a string header a seat would take.
type Status byte

// Seat statuses.
const (
	Available Status = 'a'
	Held      Status = 'h'
	Sold      Status = 's'
	// Resale: sold, and on the resale market (GET /events/{id}/listings).
	Resale Status = 'r'
)

// String is the status as the API writes it: "available", "held", "sold",
// "resale"; "" for a byte that is none of them.
func (s Status) String() string {
	switch s {
	case Available:
		return "available"
	case Held:
		return "held"
	case Sold:
		return "sold"
	case Resale:
		return "resale"
	}
	return ""
}

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool { return s.String() != "" }

// Statuses are an event's seat statuses in layout order, a byte a seat.
type Statuses []Status
