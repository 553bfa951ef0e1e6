package boxoffice

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SaleMode says how reserve requests for an event are taken.
type SaleMode string

const (
	// SaleDirect holds seats in the request itself (201).
	SaleDirect SaleMode = "direct"
	// SaleQueued appends the request to the flash-sale queue (202).
	SaleQueued SaleMode = "queued"
)

// Layout limits: generous for any real venue, small enough that a bad
// request cannot make the server expand billions of seats.
const (
	MaxSections        = 200
	MaxRowsPerSection  = 702 // A..ZZ
	MaxSeatsPerRow     = 1000
	MaxSeatsPerEvent   = 200_000
	MaxPriceCents      = 100_000_00 // 100,000.00 in the event's currency
	MaxTicketLimit     = 100
	DefaultTicketLimit = 8
	// MaxYearsAhead bounds how far ahead a new show may start.
	MaxYearsAhead = 5
)

var (
	sectionNameRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
	priceTierRE   = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
)

// Event is a show with a seat layout and a sale.
type Event struct {
	ID          ID
	Name        string
	Venue       string
	StartsAt    time.Time
	SaleOpensAt time.Time
	SaleMode    SaleMode
	// TicketLimit is how many seats one user may hold or own for the event.
	TicketLimit int
	Sections    []Section
	CreatedAt   time.Time

	// The refund policy: when Refundable, a confirmed booking may be
	// cancelled and refunded until RefundCutoffHours before StartsAt.
	Refundable        bool
	RefundCutoffHours int
	// ResaleDisabled closes fan-to-fan resale for the event.
	ResaleDisabled bool
	// ResaleCapPercent caps a resale price at this percentage of the
	// seat's face value (100: face value, as some markets require); 0 means
	// no cap.
	ResaleCapPercent int

	// DrawSeed, for a queued sale, is the secret seed of its pre-queue draw
	// (draw.go): CreateEvent stores it; only Store.Draw reads it back.
	DrawSeed []byte
}

// Resale and refund limits.
const (
	MaxRefundCutoffHours = 24 * 365
	MaxResaleCapPercent  = 1000
)

// RefundOpen reports whether a confirmed booking may be cancelled and
// refunded at now under the event's policy.
func (e *Event) RefundOpen(now time.Time) bool {
	return e.Refundable && now.Before(e.StartsAt.Add(-time.Duration(e.RefundCutoffHours)*time.Hour))
}

// ResaleMaxCents is the highest resale price of a seat of faceCents under
// the event's cap, and false when there is no cap.
func (e *Event) ResaleMaxCents(faceCents int64) (int64, bool) {
	if e.ResaleCapPercent <= 0 {
		return 0, false
	}
	return faceCents * int64(e.ResaleCapPercent) / 100, true
}

// Section is a block of seats with one price: Rows rows of SeatsPerRow
// seats, rows labelled A, B, ..., Z, AA, AB, ... and seats numbered from 1.
type Section struct {
	Name        string
	PriceTier   string
	PriceCents  int64
	Rows        int
	SeatsPerRow int
	// Features marks seats of the section, by "<row>-<number>" (e.g.
	// "A-1"), with what a buyer may need to know or ask for: wheelchair
	// spaces, companion seats, a restricted view. Best available keeps
	// such seats for those who ask for them.
	Features map[string][]SeatFeature
}

// SeatFeature is what a buyer may need to know of a seat, or ask for.
type SeatFeature string

// Seat features.
const (
	// Wheelchair: a wheelchair space.
	Wheelchair SeatFeature = "wheelchair"
	// Companion: a seat for the companion of a wheelchair user.
	Companion SeatFeature = "companion"
	// RestrictedView: part of the stage is hidden from the seat.
	RestrictedView SeatFeature = "restricted_view"
)

// SeatFeatures are the known features.
var SeatFeatures = []SeatFeature{Wheelchair, Companion, RestrictedView}

// EncodeSeatFeatures is how the stores keep a section's Features: JSON,
// "" for none.
func EncodeSeatFeatures(m map[string][]SeatFeature) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// DecodeSeatFeatures reads what EncodeSeatFeatures wrote.
func DecodeSeatFeatures(s string) (map[string][]SeatFeature, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string][]SeatFeature
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, &Error{Code: EINTERNAL, Message: "a section's seat features are unreadable", Err: err}
	}
	return m, nil
}

// KnownSeatFeature reports whether f is one of SeatFeatures.
func KnownSeatFeature(f SeatFeature) bool { return slices.Contains(SeatFeatures, f) }

// Seat is one place in the layout. Its ID is "<section>-<row>-<number>",
// stable and unique within the event; the section name cannot contain '-',
// so the section is recoverable from the ID (SectionOf).
type Seat struct {
	ID         string
	Section    string
	Row        string
	Number     int
	PriceTier  string
	PriceCents int64
	// Features: the section's Features for this seat (nil: none).
	Features []SeatFeature
}

// HasFeature reports whether the seat has feature f.
func (s Seat) HasFeature(f SeatFeature) bool { return slices.Contains(s.Features, f) }

// SeatCount is the number of seats in the layout.
func (e *Event) SeatCount() int {
	n := 0
	for _, s := range e.Sections {
		n += s.Rows * s.SeatsPerRow
	}
	return n
}

// ShowOver is how long after it starts a show is over: long enough for
// the longest show, its check-in and its last ticket views. The layout
// cache keeps no layout of a show that is over (Event.Over).
const ShowOver = 24 * time.Hour

// Over reports whether the show is over at now: more than ShowOver after
// StartsAt.
func (e *Event) Over(now time.Time) bool { return now.After(e.StartsAt.Add(ShowOver)) }

// SaleOpen reports whether reserve requests are accepted at now: from
// SaleOpensAt until the show starts.
func (e *Event) SaleOpen(now time.Time) bool {
	return !now.Before(e.SaleOpensAt) && now.Before(e.StartsAt)
}

// Validate checks an event as submitted by an organiser. It returns an
// EINVALID *Error naming the first problem found.
func (e *Event) Validate() error {
	bad := func(format string, args ...any) error { return Errorf(EINVALID, format, args...) }
	if strings.TrimSpace(e.Name) == "" {
		return bad("name is required")
	}
	if utf8.RuneCountInString(e.Name) > 200 || !utf8.ValidString(e.Name) || strings.ContainsFunc(e.Name, unicode.IsControl) {
		return bad("name must be valid UTF-8 of at most 200 characters, without control characters")
	}
	if utf8.RuneCountInString(e.Venue) > 200 || !utf8.ValidString(e.Venue) || strings.ContainsFunc(e.Venue, unicode.IsControl) {
		return bad("venue must be valid UTF-8 of at most 200 characters, without control characters")
	}
	if e.StartsAt.IsZero() {
		return bad("starts_at is required")
	}
	if e.SaleOpensAt.IsZero() {
		return bad("sale_opens_at is required")
	}
	if !e.SaleOpensAt.Before(e.StartsAt) {
		return bad("sale_opens_at must be before starts_at")
	}
	switch e.SaleMode {
	case SaleDirect, SaleQueued:
	default:
		return bad("sale_mode must be %q or %q", SaleDirect, SaleQueued)
	}
	if e.TicketLimit < 1 || e.TicketLimit > MaxTicketLimit {
		return bad("ticket_limit must be between 1 and %d", MaxTicketLimit)
	}
	if e.Refundable && (e.RefundCutoffHours < 0 || e.RefundCutoffHours > MaxRefundCutoffHours) {
		return bad("refund_cutoff_hours must be between 0 and %d", MaxRefundCutoffHours)
	}
	if e.ResaleCapPercent < 0 || e.ResaleCapPercent > MaxResaleCapPercent {
		return bad("resale_cap_percent must be between 0 (no cap) and %d", MaxResaleCapPercent)
	}
	if len(e.Sections) == 0 {
		return bad("at least one section is required")
	}
	if len(e.Sections) > MaxSections {
		return bad("at most %d sections", MaxSections)
	}
	seen := make(map[string]bool, len(e.Sections))
	total := 0
	for i, s := range e.Sections {
		if !sectionNameRE.MatchString(s.Name) {
			return bad("sections[%d].name must be 1-32 letters, digits or '_'", i)
		}
		if seen[s.Name] {
			return bad("sections[%d].name %q is used twice", i, s.Name)
		}
		seen[s.Name] = true
		if !priceTierRE.MatchString(s.PriceTier) {
			return bad("sections[%d].price_tier must be 1-32 letters, digits or '_'", i)
		}
		if s.PriceCents < 0 || s.PriceCents > MaxPriceCents {
			return bad("sections[%d].price_cents must be between 0 and %d", i, MaxPriceCents)
		}
		if s.Rows < 1 || s.Rows > MaxRowsPerSection {
			return bad("sections[%d].rows must be between 1 and %d", i, MaxRowsPerSection)
		}
		if s.SeatsPerRow < 1 || s.SeatsPerRow > MaxSeatsPerRow {
			return bad("sections[%d].seats_per_row must be between 1 and %d", i, MaxSeatsPerRow)
		}
		total += s.Rows * s.SeatsPerRow
		if total > MaxSeatsPerEvent {
			return bad("an event has at most %d seats", MaxSeatsPerEvent)
		}
		if err := s.validFeatures(); err != nil {
			return bad("sections[%d].features: %s", i, err.Message)
		}
	}
	return nil
}

// validFeatures checks that Features names seats of the section, each
// with known features, none twice.
func (s *Section) validFeatures() *Error {
	if len(s.Features) > s.Rows*s.SeatsPerRow {
		return &Error{Message: "more seats than the section has"}
	}
	for seat, fs := range s.Features {
		if _, _, ok := s.featureSeat(seat); !ok {
			return &Error{Message: fmt.Sprintf("%q is not a seat of the section (row-number, e.g. A-1)", seat)}
		}
		if len(fs) == 0 {
			return &Error{Message: fmt.Sprintf("seat %s has no features listed", seat)}
		}
		for i, f := range fs {
			if !KnownSeatFeature(f) {
				return &Error{Message: fmt.Sprintf("seat %s: unknown feature %q (known: wheelchair, companion, restricted_view)", seat, f)}
			}
			if slices.Contains(fs[:i], f) {
				return &Error{Message: fmt.Sprintf("seat %s: %s listed twice", seat, f)}
			}
		}
	}
	return nil
}

// featureSeat returns the row and number of the seat of the section that
// key ("<row>-<number>", as Features has it) names, false when key is no
// seat of the section or not as Seats spells it ("A-01").
func (s *Section) featureSeat(key string) (row, number int, ok bool) {
	label, num, ok := strings.Cut(key, "-")
	n, err := strconv.Atoi(num)
	row = RowNumber(label)
	if !ok || err != nil || row < 1 || row > s.Rows || n < 1 || n > s.SeatsPerRow || num != strconv.Itoa(n) {
		return 0, 0, false
	}
	return row, n, true
}

// Seats expands the layout into seats, section by section, row by row, in
// the order the seat map and the compact availability view use.
func (e *Event) Seats() []Seat {
	seats := make([]Seat, 0, e.SeatCount())
	for _, s := range e.Sections {
		for r := 1; r <= s.Rows; r++ {
			row := RowLabel(r)
			for n := 1; n <= s.SeatsPerRow; n++ {
				seats = append(seats, Seat{
					ID:         SeatID(s.Name, row, n),
					Section:    s.Name,
					Row:        row,
					Number:     n,
					PriceTier:  s.PriceTier,
					PriceCents: s.PriceCents,
					Features:   s.Features[row+"-"+strconv.Itoa(n)],
				})
			}
		}
	}
	return seats
}

// SeatID builds the stable id of a seat.
func SeatID(section, row string, number int) string {
	return section + "-" + row + "-" + strconv.Itoa(number)
}

// SectionOf returns the section part of a seat id ("" if it has none).
func SectionOf(seatID string) string {
	i := strings.IndexByte(seatID, '-')
	if i < 0 {
		return ""
	}
	return seatID[:i]
}

// RowNumber is RowLabel backwards: 1 for "A", 27 for "AA"; 0 for a string
// that is no row label.
func RowNumber(label string) int {
	if label == "" || len(label) > 4 {
		return 0
	}
	r := 0
	for i := 0; i < len(label); i++ {
		c := label[i]
		if c < 'A' || c > 'Z' {
			return 0
		}
		r = r*26 + int(c-'A') + 1
	}
	return r
}

// RowLabel turns a 1-based row index into its label: 1 → A, 26 → Z,
// 27 → AA, 702 → ZZ.
func RowLabel(r int) string {
	var b []byte
	for r > 0 {
		r--
		b = append([]byte{byte('A' + r%26)}, b...)
		r /= 26
	}
	return string(b)
}
