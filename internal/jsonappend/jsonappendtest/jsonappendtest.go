// Package jsonappendtest holds the inputs of the differential tests that
// each user of jsonappend writes: the texts, numbers and times that
// encoding/json treats apart, so that every appender is checked on all of
// them.
package jsonappendtest

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Escapes are texts encoding/json escapes or replaces (HTML characters, a
// control character, U+2028, DEL, a backslash, invalid UTF-8), beside the
// empty text and non-ASCII text it writes as it is.
var Escapes = []string{"", "a <b> & \"c\"", "x<y", "m&n", "tab\there", "é ü 🎟", "line\u2028sep", "\x7f", "back\\slash", string([]byte{0xff, 'x'})}

// Texts is the test's own plain values followed by Escapes.
func Texts(plain ...string) []string { return append(plain, Escapes...) }

// Floats are numbers on both sides of encoding/json's switch to exponent
// form, and negative zero.
var Floats = []float64{0, math.Copysign(0, -1), 1, 12.5, 113, 0.1, 1e-7, 3e-6, 1e20, 1e21, 5e300, 123456.789}

// zones are UTC and two offsets, one not a whole hour.
var zones = []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -8*3600)}

// Time is a random instant between 1970 and 2514 with its nanoseconds, in
// UTC or in one of two other zones.
func Time(r *rand.Rand) time.Time {
	return time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
}

// Pick is a random element of s.
func Pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// Differential checks that write writes what json.Marshal writes, for n
// values made by gen (from a generator seeded with seed, and the value's
// index), and fails t at the first that differs.
func Differential[V any](t *testing.T, seed uint64, n int, gen func(r *rand.Rand, i int) V, write func(v *V) ([]byte, error)) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range n {
		v := gen(r, i)
		want, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := write(&v); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("value %d: %v\n got %s\nwant %s", i, err, got, want)
		}
	}
}
