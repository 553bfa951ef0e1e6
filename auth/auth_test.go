package auth

import (
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
