// Package jsonscan reads the plain shapes of JSON that hot paths decode on
// every request (a reserve's body, a token's claims) in one pass, without
// reflection. Each reader reports ok only for the plain case it knows:
// strings of printable ASCII without escapes, whole non-negative numbers.
// Its callers fall back to encoding/json for anything else and check with
// differential tests that what they accept decodes the same both ways.
package jsonscan

import "bytes"

// Space returns the index of the first byte at or after i that is not
// JSON whitespace.
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// String finds the JSON string starting at b[i] if it is printable ASCII
// without escapes: its text is b[s:e], and b[e] is its closing quote.
func String(b []byte, i int) (s, e int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	for e = i + 1; e < len(b); e++ {
		switch c := b[e]; {
		case c == '"':
			return i + 1, e, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// Text reads the plain string at b[i] (see String) into *dst; next is the
// index after its closing quote. It leaves *dst as it was if not ok.
func Text(b []byte, i int, dst *string) (next int, ok bool) {
	s, e, ok := String(b, i)
	if !ok {
		return 0, false
	}
	*dst = string(b[s:e])
	return e + 1, true
}

// Strings reads the array of plain strings starting at b[i]; next is the
// index after its closing bracket. An empty array is a non-nil empty
// slice, as encoding/json makes it.
func Strings(b []byte, i int) (ss []string, next int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, 0, false
	}
	ss = []string{}
	i = Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return ss, i + 1, true
	}
	for {
		s, e, ok := String(b, i)
		if !ok {
			return nil, 0, false
		}
		ss = append(ss, string(b[s:e]))
		i = Space(b, e+1)
		if i >= len(b) {
			return nil, 0, false
		}
		if b[i] == ']' {
			return ss, i + 1, true
		}
		if b[i] != ',' {
			return nil, 0, false
		}
		i = Space(b, i+1)
	}
}

// Whole reads the number starting at b[i] if it is a whole number of 1 to
// 15 digits without a sign, fraction or exponent (exact as a float64);
// next is the index after it.
func Whole(b []byte, i int) (n int64, next int, ok bool) {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		n = n*10 + int64(b[j]-'0')
		j++
	}
	if d := j - i; d == 0 || d > 15 || d > 1 && b[i] == '0' {
		return 0, 0, false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0, false
	}
	return n, j, true
}

// Number finds the JSON number starting at b[i] (a sign, digits, a
// fraction, an exponent, as the grammar has them): its text is b[i:next],
// for strconv.ParseFloat, which encoding/json also reads a float64 with.
func Number(b []byte, i int) (next int, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j = digits(b, j)
	default:
		return 0, false
	}
	if j < len(b) && b[j] == '.' {
		if d := digits(b, j+1); d > j+1 {
			j = d
		} else {
			return 0, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if d := digits(b, j); d > j {
			j = d
		} else {
			return 0, false
		}
	}
	return j, true
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// maxKeys bounds the keys of an object Object reads; one with more is left
// to the general way.
const maxKeys = 16

// Object calls field for each key of the object starting at b[i], with the
// index of its value; field returns the index after the value, or ok
// false to give up. Object reports whether the whole of b is that one
// object (whitespace around it allowed) and every field was read. A key
// that comes twice (encoding/json keeps the last value) or an object of
// more than maxKeys keys is refused, so no caller tracks repeats.
func Object(b []byte, i int, field func(key []byte, at int) (next int, ok bool)) bool {
	next, ok := ObjectAt(b, i, field)
	return ok && Space(b, next) == len(b)
}

// ObjectAt is Object for an object inside a document (an element of an
// array): next is the index after its closing brace.
func ObjectAt(b []byte, i int, field func(key []byte, at int) (next int, ok bool)) (next int, ok bool) {
	var keys [maxKeys][]byte
	n := 0
	i = Space(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		ks, ke, ok := String(b, i)
		if !ok {
			return 0, false
		}
		key := b[ks:ke]
		if n == maxKeys {
			return 0, false
		}
		for _, k := range keys[:n] {
			if bytes.Equal(k, key) {
				return 0, false
			}
		}
		keys[n], n = key, n+1
		i = Space(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		if i, ok = field(key, Space(b, i+1)); !ok {
			return 0, false
		}
		i = Space(b, i)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '}' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = Space(b, i+1)
	}
}
