// Package auth verifies and issues the bearer tokens of boxoffice: HS256
// JWTs with claims sub (the user id), role ("admin" for organisers; any
// other value is a customer) and exp. This is how the service sits behind
// a real identity provider that signs with a shared secret.
package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice"
)

// MinSecretLen is the shortest secret accepted: HS256 wants 32 bytes.
const MinSecretLen = 32

// Authenticator signs and verifies tokens with one secret.
type Authenticator struct {
	secret []byte
	now    func() time.Time
}

// New returns an Authenticator. now nil means time.Now.
func New(secret []byte, now func() time.Time) (*Authenticator, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: secret must be at least %d bytes", MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	return &Authenticator{secret: secret, now: now}, nil
}

type claims struct {
	Role string `json:"role,omitempty"`
	jwt.RegisteredClaims
}

// Issue signs a token for sub with role, valid for ttl.
func (a *Authenticator) Issue(sub, role string, ttl time.Duration) (string, error) {
	if sub == "" || len(sub) > 128 {
		return "", errors.New("auth: sub must be 1-128 bytes")
	}
	now := a.now()
	c := claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   sub,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.secret)
}

// Verify checks a token's signature, algorithm and expiry and returns the
// user it names. Any failure is an EUNAUTHORIZED *boxoffice.Error.
func (a *Authenticator) Verify(token string) (boxoffice.User, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return a.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(a.now),
		jwt.WithLeeway(5*time.Second),
	)
	if err != nil {
		msg := "invalid token"
		if errors.Is(err, jwt.ErrTokenExpired) {
			msg = "token expired"
		}
		return boxoffice.User{}, &boxoffice.Error{Code: boxoffice.EUNAUTHORIZED, Message: msg, Err: err}
	}
	if c.Subject == "" || len(c.Subject) > 128 {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "token has no valid sub")
	}
	return boxoffice.User{ID: c.Subject, Role: c.Role}, nil
}

// LoadOrCreateSecret returns the secret kept in dir/auth.secret, making a
// random one the first time, so an embedded install keeps its tokens valid
// across restarts without any set-up.
func LoadOrCreateSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, "auth.secret")
	if b, err := os.ReadFile(path); err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) >= MinSecretLen {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("auth: %s holds a secret shorter than %d bytes", path, MinSecretLen)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	s := hex.EncodeToString(raw)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return nil, err
	}
	return []byte(s), nil
}
