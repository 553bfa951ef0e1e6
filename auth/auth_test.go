package auth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice"
)

var secret = []byte(strings.Repeat("k", 32))

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, err := New(secret, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good, _ := a.Issue("alice", boxoffice.RoleAdmin, time.Hour)
	expired, _ := a.Issue("alice", "", -time.Minute)
	other, _ := New([]byte(strings.Repeat("x", 32)), func() time.Time { return now })
	wrongKey, _ := other.Issue("alice", "", time.Hour)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice"}).SignedString(secret)
	noSub, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": now.Add(time.Hour).Unix()}).SignedString(secret)

	u, err := a.Verify(good)
	if err != nil || u.ID != "alice" || !u.IsAdmin() {
		t.Fatalf("good token: %+v %v", u, err)
	}
	for name, tok := range map[string]string{
		"Expired": expired, "WrongKey": wrongKey, "AlgNone": none, "OtherAlg": hs512,
		"NoExp": noExp, "NoSub": noSub, "Garbage": "abc.def.ghi", "Tampered": good[:len(good)-3] + "AAA",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := a.Verify(tok); boxoffice.ErrorCode(err) != boxoffice.EUNAUTHORIZED {
				t.Fatalf("Verify = %v, want EUNAUTHORIZED", err)
			}
		})
	}
}

func TestSecretRules(t *testing.T) {
	if _, err := New([]byte("short"), nil); err == nil {
		t.Error("a short secret was accepted")
	}
	dir := t.TempDir()
	s1, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := LoadOrCreateSecret(dir)
	if err != nil || string(s1) != string(s2) || len(s1) < MinSecretLen {
		t.Fatalf("secret not kept across calls: %q %q %v", s1, s2, err)
	}
}

// A secret file others may read is made private, and the caller told.
func TestSecretFileReadableByOthers(t *testing.T) {
	dir := t.TempDir()
	s1, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "auth.secret")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := LoadOrCreateSecret(dir)
	if !errors.Is(err, ErrSecretExposed) || string(s2) != string(s1) {
		t.Fatalf("a 0644 secret: %v (same secret: %v)", err, string(s2) == string(s1))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after: %v, want 0600", fi.Mode().Perm())
	}
	if _, err := LoadOrCreateSecret(dir); err != nil {
		t.Errorf("the fixed file: %v", err)
	}
}

// Audience, issuer, lifetime, iat and the events claim.
func TestTokenClaims(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, _ := New([]byte(strings.Repeat("x", 40)), func() time.Time { return now })
	other, _ := New([]byte(strings.Repeat("x", 40)), func() time.Time { return now })
	other.Require(Options{Audience: "another-service", Issuer: "idp"})
	a.Require(Options{Audience: "boxoffice", Issuer: "idp", MaxLifetime: 48 * time.Hour})
	tok, err := a.IssueScoped("org", "admin", time.Hour, []boxoffice.ID{7, 9})
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.Verify(tok)
	if err != nil || u.ID != "org" || len(u.Events) != 2 || !u.InScope(9) || u.InScope(8) || !u.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("Verify: %+v %v", u, err)
	}
	foreign, _ := other.Issue("org", "admin", time.Hour)
	if _, err := a.Verify(foreign); boxoffice.ErrorCode(err) != boxoffice.EUNAUTHORIZED {
		t.Errorf("a token for another audience: %v", err)
	}
	if _, err := a.IssueScoped("org", "", 72*time.Hour, nil); err == nil {
		t.Error("issued a token past the maximum lifetime")
	}
	sign := func(c jwt.MapClaims) string {
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(strings.Repeat("x", 40)))
		return s
	}
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "u", "aud": "boxoffice", "iss": "idp", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	for name, mod := range map[string]func(jwt.MapClaims){
		"IssuedInTheFuture": func(c jwt.MapClaims) { c["iat"] = now.Add(365 * 24 * time.Hour).Unix() },
		"FiftyYears":        func(c jwt.MapClaims) { c["exp"] = now.Add(50 * 365 * 24 * time.Hour).Unix() },
		"NoIatFarExp":       func(c jwt.MapClaims) { delete(c, "iat"); c["exp"] = now.Add(30 * 24 * time.Hour).Unix() },
		"OtherIssuer":       func(c jwt.MapClaims) { c["iss"] = "someone" },
		"NoAudience":        func(c jwt.MapClaims) { delete(c, "aud") },
		"BadEvents":         func(c jwt.MapClaims) { c["events"] = []string{"seven"} },
		"NotYetValid":       func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() },
		"ExpiredFraction":   func(c jwt.MapClaims) { c["exp"] = float64(now.Add(-time.Minute).Unix()) + 0.5 },
		"ExpNotANumber":     func(c jwt.MapClaims) { c["exp"] = "2000000000" },
		"IatNotANumber":     func(c jwt.MapClaims) { c["iat"] = "1800000000" },
	} {
		c := base()
		mod(c)
		if _, err := a.Verify(sign(c)); boxoffice.ErrorCode(err) != boxoffice.EUNAUTHORIZED {
			t.Errorf("%s: %v, want EUNAUTHORIZED", name, err)
		}
	}
	if _, err := a.Verify(sign(base())); err != nil {
		t.Errorf("a good token: %v", err)
	}
	// Dates are JSON numbers, fractions allowed (RFC 7519's NumericDate).
	c := base()
	c["exp"], c["iat"], c["nbf"] = float64(now.Add(time.Hour).Unix())+0.75, float64(now.Unix())-0.25, now.Unix()-1
	if u, err := a.Verify(sign(c)); err != nil || !u.Expires.Equal(now.Add(time.Hour)) {
		t.Errorf("fractional dates: %+v %v, want expiry %s", u, err, now.Add(time.Hour))
	}
}

// verifyOwn, Verify's fast path, accepts only what the library accepts,
// and it is the path Issue's own tokens take.
func TestVerifyOwnAgreesWithTheLibrary(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, _ := New(secret, func() time.Time { return now })
	a.Require(Options{Audience: "boxoffice", Issuer: "idp"})
	sign := func(m jwt.SigningMethod, c jwt.MapClaims, header map[string]any) string {
		tok := jwt.NewWithClaims(m, c)
		for k, v := range header {
			tok.Header[k] = v
		}
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "u", "aud": "boxoffice", "iss": "idp", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	own, _ := a.Issue("alice", "", time.Hour)
	good := sign(jwt.SigningMethodHS256, claims(nil), nil)
	_, payload, _ := strings.Cut(good, ".")
	payload, _, _ = strings.Cut(payload, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"admin","role":"admin","aud":"boxoffice","iss":"idp","exp":1800003600}`))
	tokens := map[string]string{
		"Own": own, "Good": good,
		"WithKid":        sign(jwt.SigningMethodHS256, claims(nil), map[string]any{"kid": "1"}),
		"HS512":          sign(jwt.SigningMethodHS512, claims(nil), nil),
		"Expired":        sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }), nil),
		"OtherAudience":  sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["aud"] = "x" }), nil),
		"OtherIssuer":    sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["iss"] = "x" }), nil),
		"NoExp":          sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { delete(c, "exp") }), nil),
		"FutureIat":      sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }), nil),
		"NotYet":         sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), nil),
		"ExpAsString":    sign(jwt.SigningMethodHS256, claims(func(c jwt.MapClaims) { c["exp"] = "1800003600" }), nil),
		"ForgedPayload":  strings.Replace(good, payload, forged, 1),
		"BadSignature":   good[:len(good)-4] + "AAAA",
		"ShortSignature": good[:len(good)-8],
		"FourSegments":   good + ".x",
		"NoSignature":    good[:strings.LastIndexByte(good, '.')],
	}
	for name, tok := range tokens {
		var c verified
		fast := a.verifyOwn(tok, &c)
		var lc verified
		_, err := a.parser.ParseWithClaims(tok, &lc, func(*jwt.Token) (any, error) { return a.secret, nil })
		if fast && err != nil {
			t.Errorf("%s: the fast path accepted what the library refuses (%v)", name, err)
		}
		if fast && !reflect.DeepEqual(c, lc) {
			t.Errorf("%s: claims %+v, the library read %+v", name, c, lc)
		}
		if want := name == "Own" || name == "Good"; fast != want {
			t.Errorf("%s: fast path %v, want %v", name, fast, want)
		}
	}
}

// BenchmarkVerify is one request's token check (every authenticated call
// pays it).
func BenchmarkVerify(b *testing.B) {
	a, _ := New(secret, nil)
	tok, _ := a.Issue("bench-user-123456", "", time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}
