package boxoffice

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// ID is a Snowflake-style 64-bit identifier (see package snowflake). It is
// rendered as a decimal string in JSON because JavaScript numbers lose
// precision above 2^53.
type ID int64

// ParseID parses the decimal form of an ID. It returns an EINVALID error for
// anything that is not a positive 64-bit decimal number.
func ParseID(s string) (ID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, Errorf(EINVALID, "invalid id %q", truncate(s, 32))
	}
	return ID(n), nil
}

func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// MarshalText makes IDs decimal strings in JSON, including as map keys.
func (id ID) MarshalText() ([]byte, error) { return strconv.AppendInt(nil, int64(id), 10), nil }

// UnmarshalText accepts the decimal string form.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// UnmarshalJSON accepts a decimal string, and a bare JSON number for
// clients that send one.
func (id *ID) UnmarshalJSON(b []byte) error {
	// A string without escapes is its bytes between the quotes: no second
	// pass of the JSON decoder (which was 2 % of the front door's CPU).
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		return id.UnmarshalText(b[1 : len(b)-1])
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return id.UnmarshalText([]byte(s))
	}
	return id.UnmarshalText(b)
}

// IDGenerator hands out unique IDs. snowflake.Generator implements it.
// NextID fails (EUNAVAILABLE) when the generator cannot vouch for the
// uniqueness of its next id, such as a process whose node id lease is lost
// or unconfirmed; callers return that error (503 with Retry-After).
type IDGenerator interface {
	NextID() (ID, error)
}

// EventIDGenerator is an IDGenerator whose ids may depend on the event
// they belong to: a sharded store routes a booking, ticket, listing,
// waitlist entry or queued request by its id alone, so it is minted for
// its event's shard (postgres.Sharded). NextIDFor may look the event's
// placement up, hence the context.
type EventIDGenerator interface {
	IDGenerator
	NextIDFor(ctx context.Context, eventID ID) (ID, error)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
