package jsonscan

import (
	"reflect"
	"testing"
)

func TestWhole(t *testing.T) {
	for in, want := range map[string][2]int64{"0": {0, 1}, "7,": {7, 1}, "1800000000}": {1800000000, 10}, "999999999999999": {999999999999999, 15}} {
		if n, next, ok := Whole([]byte(in), 0); !ok || n != want[0] || int64(next) != want[1] {
			t.Errorf("Whole(%q) = %d, %d, %v", in, n, next, ok)
		}
	}
	for _, in := range []string{"", "-1", "01", "1.5", "1e3", "2E1", "1000000000000000", "x"} {
		if _, _, ok := Whole([]byte(in), 0); ok {
			t.Errorf("Whole(%q) accepted", in)
		}
	}
}

func TestStringsAndObject(t *testing.T) {
	for in, want := range map[string][]string{`[]`: {}, `[ "a" , "b-1" ]`: {"a", "b-1"}} {
		if ss, next, ok := Strings([]byte(in), 0); !ok || !reflect.DeepEqual(ss, want) || next != len(in) {
			t.Errorf("Strings(%q) = %q, %d, %v", in, ss, next, ok)
		}
	}
	for _, in := range []string{`["a",]`, `["a\n"]`, `["\u0041"]`, `["é"]`, `[1]`, `["a"`, `null`} {
		if _, _, ok := Strings([]byte(in), 0); ok {
			t.Errorf("Strings(%q) accepted", in)
		}
	}
	var keys []string
	ok := Object([]byte(" {\"a\" : \"x\", \"b\":[]}\n"), 0, func(key []byte, at int) (int, bool) {
		keys = append(keys, string(key))
		if key[0] == 'a' {
			_, e, ok := String([]byte(" {\"a\" : \"x\", \"b\":[]}\n"), at)
			return e + 1, ok
		}
		_, next, ok := Strings([]byte(" {\"a\" : \"x\", \"b\":[]}\n"), at)
		return next, ok
	})
	if !ok || !reflect.DeepEqual(keys, []string{"a", "b"}) {
		t.Errorf("Object: %v, keys %q", ok, keys)
	}
	many := "{"
	for i := range maxKeys + 1 {
		if i > 0 {
			many += ","
		}
		many += `"k` + string(rune('a'+i)) + `":"v"`
	}
	many += "}"
	for _, in := range []string{`{"a":"x"} x`, `{"a":"x",}`, `{"a" "x"}`, `["a"]`, `{"a":"x"`, `{"a":"x","b":"y","a":"z"}`, many} {
		if Object([]byte(in), 0, func(_ []byte, at int) (int, bool) { _, e, ok := String([]byte(in), at); return e + 1, ok }) {
			t.Errorf("Object(%q) accepted", in)
		}
	}
}

// Number takes JSON's number grammar, and only it: what it takes
// strconv.ParseFloat reads, as encoding/json does.
func TestNumber(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "-0": 2, "12.5,": 4, "1e3}": 3, "-1.25E-7 ": 8, "0.0": 3, "7E+2": 4, "123456789012345678901234": 24} {
		if next, ok := Number([]byte(in), 0); !ok || next != want {
			t.Errorf("Number(%q) = %d, %v; want %d", in, next, ok, want)
		}
	}
	for _, in := range []string{"", "-", "+1", "01", ".5", "1.", "1e", "1e+", "--1", "x", "NaN"} {
		if next, ok := Number([]byte(in), 0); ok && next == len(in) {
			t.Errorf("Number(%q) took it whole", in)
		}
	}
}

func TestText(t *testing.T) {
	s := "kept"
	if next, ok := Text([]byte(`"a-1",`), 0, &s); !ok || s != "a-1" || next != 5 {
		t.Errorf(`Text("a-1") = %q, %d, %v`, s, next, ok)
	}
	if _, ok := Text([]byte(`"a\n"`), 0, &s); ok || s != "a-1" {
		t.Errorf("Text of an escape: %v, wrote %q", ok, s)
	}
}
