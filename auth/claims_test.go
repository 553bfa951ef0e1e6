package auth

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
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
		var fast verified
		if !fast.decodeFast([]byte(claims)) {
			if !reflect.DeepEqual(fast, verified{}) {
				t.Fatalf("%q: refused, but wrote %+v", claims, fast)
			}
			return false
		}
		var slow verified
		if err := json.Unmarshal([]byte(claims), &slow); err != nil {
			t.Fatalf("%q: fast path accepted what json.Unmarshal refuses: %v", claims, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast path %+v, json.Unmarshal %+v", claims, fast, slow)
		}
		return true
	}
	for _, c := range commonClaims {
		if !check(c) {
			t.Errorf("%q: not on the fast path", c)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	bits := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, "\n", `1`, `0`, `.5`, `e3`, `-`, `a`, `é`, "\x00",
		`null`, `"x"`, `"SUB"`, `"sub":"y"`, `"aud":[]`, `"aud":"z"`, `"events":[]`, `"exp":1`, `\u0041`, `1e3`, `true`, `9999999999999999`}
	accepted := 0
	for range 50_000 {
		b := []byte(commonClaims[r.IntN(len(commonClaims))])
		for range 1 + r.IntN(3) {
			at := r.IntN(len(b) + 1)
			bit := bits[r.IntN(len(bits))]
			switch r.IntN(3) {
			case 0:
				b = append(b[:at:at], append([]byte(bit), b[at:]...)...)
			case 1:
				if at < len(b) {
					b = append(b[:at:at], append([]byte(bit), b[at+1:]...)...)
				}
			default:
				if at < len(b) {
					b = append(b[:at:at], b[at+1+r.IntN(len(b)-at):]...)
				}
			}
		}
		if check(string(b)) {
			accepted++
		}
	}
	t.Logf("fast path took %d of 50,000 mutated claims", accepted)
}
