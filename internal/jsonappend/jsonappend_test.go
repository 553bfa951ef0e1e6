package jsonappend

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"
)

// Each appender writes what encoding/json writes for its value, in the
// plain cases it handles itself and in the ones it hands over.
func TestAppendersAreEncodingJSONs(t *testing.T) {
	same := func(got []byte, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			want = []byte("null")
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%#v: appended %s, encoding/json %s", v, got, want)
		}
	}
	texts := []string{"", "plain", "a <b> & \"c\"", "tab\there", "é ü 🎟", "line\u2028sep", "\x7f", "back\\slash", string([]byte{0xff, 'x'})}
	for _, s := range texts {
		same(String(nil, s), s)
	}
	for c := range 256 {
		s := "a" + string([]byte{byte(c)}) + "b"
		same(String(nil, s), s)
	}
	for _, ss := range [][]string{nil, {}, {"a"}, texts} {
		same(Strings(nil, ss), ss)
	}
	for _, n := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
		same(QuotedInt(nil, n), strconv.FormatInt(n, 10))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 0.1, 1e-7, 3e-6, 1e20, 1e21, 5e300, math.NaN(), math.Inf(1)} {
		same(Float(nil, f), f)
	}
	for _, tm := range []time.Time{{}, time.Unix(1_800_000_000, 123).UTC(), time.Unix(1_800_000_000, 0).In(time.FixedZone("x", 5*3600+30*60)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		same(Time(nil, tm), tm)
	}
	if got := OptionalString([]byte("{"), `"k":`, ""); string(got) != "{" {
		t.Errorf("empty optional string written: %s", got)
	}
	if got := OptionalString([]byte("{"), `"k":`, "v"); string(got) != `{"k":"v"` {
		t.Errorf("optional string: %s", got)
	}
	if got := OptionalQuotedInt([]byte("{"), `"k":`, 0); string(got) != "{" {
		t.Errorf("zero optional id written: %s", got)
	}
	if got := OptionalQuotedInt([]byte("{"), `"k":`, -7); string(got) != `{"k":"-7"` {
		t.Errorf("optional id: %s", got)
	}
}

func BenchmarkString(b *testing.B) {
	s := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}
