// Package numfmt formats numbers for the reports people read (the drill's,
// the locking benchmark's).
package numfmt

import "strconv"

// Thousands formats n with a comma between groups of three digits:
// 70000 → "70,000", -4200 → "-4,200".
func Thousands[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	b := make([]byte, 0, len(sign)+len(s)+len(s)/3)
	b = append(b, sign...)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}
