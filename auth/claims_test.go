package auth

import (
	"encoding/json"
	"testing"

	"github.com/boxoffice/boxoffice/internal/jsonscan/jsonscantest"
)

// The claims tokens carry take the fast path.
var commonClaims = []string{
	`{"exp":1800003600,"iat":1800000000,"sub":"p1-u123"}`,
	`{"role":"admin","sub":"organiser","iss":"boxoffice","aud":["fans"],"exp":1800003600,"iat":1800000000}`,
	`{"events":["266168001122795520","7"],"sub":"door","aud":"fans","exp":1800003600,"iat":1800000000,"nbf":1800000000}`,
	`{"sub":"x","exp":0}`,
	`{}`,
}

// decodeFast accepts only what json.Unmarshal reads, and reads it the
// same: the common claims and 50,000 random mutations of them.
func TestClaimsDecodeFastAgreesWithJSON(t *testing.T) {
	check := func(claims string) bool {
		t.Helper()
		return jsonscantest.Agree(t, claims, (*verified).decodeFast, func(b []byte, v *verified) error { return json.Unmarshal(b, v) })
	}
	for _, c := range commonClaims {
		if !check(c) {
			t.Errorf("%q: not on the fast path", c)
		}
	}
	bits := append([]string{`"SUB"`, `"sub":"y"`, `"aud":[]`, `"aud":"z"`, `"events":[]`, `"exp":1`}, jsonscantest.Bits...)
	accepted := 0
	jsonscantest.Mutants(7, commonClaims, bits, 50_000, func(claims string) {
		if check(claims) {
			accepted++
		}
	})
	t.Logf("fast path took %d of 50,000 mutated claims", accepted)
}
