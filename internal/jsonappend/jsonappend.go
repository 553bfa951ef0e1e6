// Package jsonappend appends JSON values to a byte slice without
// reflection, byte for byte as encoding/json writes them, for the few
// documents written once per request on the hot path (the queue ticket, a
// queued request). Anything outside the plain cases (text to escape, a
// float in exponent form, a year past 9999) goes through encoding/json, so
// the output never differs from it; each user of the package checks that
// with a differential test on random values.
package jsonappend

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// String quotes s as encoding/json does; anything but printable ASCII
// without the characters it escapes goes through encoding/json.
func String(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			return Value(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain marks the bytes encoding/json writes as they are inside a string:
// printable ASCII but for the quote, the backslash and its HTML escapes.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// OptionalString writes key (with its comma and colon) and s unless s is
// empty: a string field with omitempty.
func OptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return String(append(b, key...), s)
}

// Strings writes ss as a JSON array, null if ss is nil.
func Strings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = String(b, s)
	}
	return append(b, ']')
}

// OptionalQuotedInt writes key (with its comma and colon) and n as
// QuotedInt does, unless n is zero: an id field with omitempty.
func OptionalQuotedInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return QuotedInt(append(b, key...), n)
}

// QuotedInt writes n as a JSON string of its decimal digits, as an id
// with a MarshalText method is written.
func QuotedInt(b []byte, n int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '"')
}

// Float writes f as encoding/json does for the plain range; the exponent
// forms, and NaN and the infinities (which it refuses), go through it.
func Float(b []byte, f float64) []byte {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) || math.IsInf(f, 0) {
		return Value(b, f)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// Writable reports whether time.Time.MarshalJSON accepts t: its year is
// within 0 to 9999.
func Writable(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// Time writes t as time.Time.MarshalJSON does, for the years it accepts.
func Time(b []byte, t time.Time) []byte {
	if !Writable(t) {
		return Value(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// Value is the way out to encoding/json for the rare values the appenders
// above leave to it; one it refuses (NaN, a year past 9999) is written
// null rather than failing the whole document.
func Value(b []byte, v any) []byte {
	q, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, q...)
}
