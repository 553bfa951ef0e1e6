// Package auth verifies and issues the bearer tokens of boxoffice: HS256
// JWTs with claims sub (the user id), role ("admin" for organisers; any
// other value is a customer) and exp. This is how the service sits behind
// a real identity provider that signs with a shared secret.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonscan"
)

// ErrSecretExposed is LoadOrCreateSecret's warning that the secret's file
// was readable by others (its mode is fixed; the secret is returned).
var ErrSecretExposed = errors.New("auth: the secret's file was readable by others")

// MinSecretLen is the shortest secret accepted: HS256 wants 32 bytes.
const MinSecretLen = 32

// Authenticator signs and verifies tokens with one secret.
type Authenticator struct {
	secret []byte
	now    func() time.Time
	opts   Options
	parser *jwt.Parser // built from opts once: Verify runs on every request
	// validator is the parser's claims check, for verifyOwn.
	validator *jwt.Validator
	// macs are HMAC-SHA256 states keyed with secret, reused across
	// requests: a keyed state costs two SHA-256 states to build.
	macs sync.Pool
}

// Options are what a token must say besides its signature and expiry,
// for a service behind an identity provider that issues tokens for
// several services.
type Options struct {
	// Audience and Issuer, when set, must be the token's aud (one of them)
	// and iss; the tokens Issue makes carry them.
	Audience, Issuer string
	// MaxLifetime bounds exp - iat (exp - now without iat): a token meant
	// to live for decades is refused. Zero: DefaultMaxLifetime.
	MaxLifetime time.Duration
}

// DefaultMaxLifetime is the longest a token may live unless configured.
const DefaultMaxLifetime = 31 * 24 * time.Hour

// Require sets what tokens must say (see Options); call it before use.
func (a *Authenticator) Require(o Options) {
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	a.opts = o
	a.parser = a.newParser()
}

func (a *Authenticator) newParser() *jwt.Parser {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat in the future is refused
		jwt.WithTimeFunc(a.now),
		jwt.WithLeeway(5 * time.Second),
	}
	if a.opts.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.opts.Audience))
	}
	if a.opts.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.opts.Issuer))
	}
	a.validator = jwt.NewValidator(opts...)
	return jwt.NewParser(opts...)
}

// New returns an Authenticator. now nil means time.Now.
func New(secret []byte, now func() time.Time) (*Authenticator, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: secret must be at least %d bytes", MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{secret: secret, now: now, opts: Options{MaxLifetime: DefaultMaxLifetime}}
	a.macs.New = func() any { return hmac.New(sha256.New, secret) }
	a.parser = a.newParser()
	return a, nil
}

type claims struct {
	Role string `json:"role,omitempty"`
	// Events scopes an organiser's or staff token (boxoffice.User.Events).
	Events []string `json:"events,omitempty"`
	jwt.RegisteredClaims
}

// verified is what Verify reads of a token: claims' fields, with the dates
// as plain JSON numbers (RFC 7519's NumericDate). jwt.NumericDate decodes
// each date with a json.Unmarshal of its own, a sizeable part of a token
// check that every request pays.
type verified struct {
	Role     string           `json:"role"`
	Events   []string         `json:"events"`
	Subject  string           `json:"sub"`
	Issuer   string           `json:"iss"`
	Audience jwt.ClaimStrings `json:"aud"`
	Expires  *float64         `json:"exp"`
	Issued   *float64         `json:"iat"`
	NotYet   *float64         `json:"nbf"`
}

// date is seconds since the epoch as jwt.NumericDate reads them.
func date(secs *float64) *jwt.NumericDate {
	if secs == nil {
		return nil
	}
	whole, frac := math.Modf(*secs)
	return jwt.NewNumericDate(time.Unix(int64(whole), int64(frac*1e9)))
}

func (v *verified) GetExpirationTime() (*jwt.NumericDate, error) { return date(v.Expires), nil }
func (v *verified) GetIssuedAt() (*jwt.NumericDate, error)       { return date(v.Issued), nil }
func (v *verified) GetNotBefore() (*jwt.NumericDate, error)      { return date(v.NotYet), nil }
func (v *verified) GetIssuer() (string, error)                   { return v.Issuer, nil }
func (v *verified) GetSubject() (string, error)                  { return v.Subject, nil }
func (v *verified) GetAudience() (jwt.ClaimStrings, error)       { return v.Audience, nil }

// Issue signs a token for sub with role, valid for ttl.
func (a *Authenticator) Issue(sub, role string, ttl time.Duration) (string, error) {
	return a.IssueScoped(sub, role, ttl, nil)
}

// IssueScoped is Issue for a token scoped to events (an organiser or venue
// staff of those events alone).
func (a *Authenticator) IssueScoped(sub, role string, ttl time.Duration, events []boxoffice.ID) (string, error) {
	if sub == "" || len(sub) > 128 {
		return "", errors.New("auth: sub must be 1-128 bytes")
	}
	if ttl > a.opts.MaxLifetime {
		return "", fmt.Errorf("auth: a token may live %s at most", a.opts.MaxLifetime)
	}
	now := a.now()
	c := claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   sub,
		Issuer:    a.opts.Issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	if a.opts.Audience != "" {
		c.Audience = jwt.ClaimStrings{a.opts.Audience}
	}
	for _, id := range events {
		c.Events = append(c.Events, id.String())
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.secret)
}

// Verify checks a token's signature, algorithm and expiry and returns the
// user it names. Any failure is an EUNAUTHORIZED *boxoffice.Error.
func (a *Authenticator) Verify(token string) (boxoffice.User, error) {
	var c verified
	var err error
	if !a.verifyOwn(token, &c) {
		c = verified{}
		_, err = a.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return a.secret, nil })
	}
	if err != nil {
		msg := "invalid token"
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			msg = "token expired"
		case errors.Is(err, jwt.ErrTokenInvalidAudience):
			msg = "token for another audience"
		case errors.Is(err, jwt.ErrTokenInvalidIssuer):
			msg = "token from another issuer"
		case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
			msg = "token issued in the future"
		}
		return boxoffice.User{}, &boxoffice.Error{Code: boxoffice.EUNAUTHORIZED, Message: msg, Err: err}
	}
	if c.Subject == "" || len(c.Subject) > 128 {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "token has no valid sub")
	}
	expires := date(c.Expires).Time // required by the parser
	from := a.now()
	if c.Issued != nil {
		from = date(c.Issued).Time
	}
	if expires.Sub(from) > a.opts.MaxLifetime+5*time.Second {
		return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "token lives longer than %s", a.opts.MaxLifetime)
	}
	u := boxoffice.User{ID: c.Subject, Role: c.Role, Expires: expires}
	for _, e := range c.Events {
		id, err := boxoffice.ParseID(e)
		if err != nil {
			return boxoffice.User{}, boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "token's events claim is not a list of event ids")
		}
		u.Events = append(u.Events, id)
	}
	return u, nil
}

// ownHeader is the first segment of every token Issue signs: the header
// golang-jwt writes for HS256.
var ownHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// verifyOwn is ParseWithClaims for a valid token with Issue's header,
// the usual case, at a third of its cost: the header is compared as it is
// instead of decoded into a map, and the MAC state is reused. It checks
// the same things with the library's own claims validator, and reports
// false for anything else (another header, a bad signature, invalid
// claims), which the library then parses and refuses with its own error:
// this path only ever accepts.
func (a *Authenticator) verifyOwn(token string, c *verified) bool {
	rest, ok := strings.CutPrefix(token, ownHeader+".")
	if !ok {
		return false
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.IndexByte(sig, '.') >= 0 {
		return false
	}
	var want [sha256.Size]byte
	if n, err := base64.RawURLEncoding.Decode(want[:], []byte(sig)); err != nil || n != len(want) {
		return false
	}
	mac := a.macs.Get().(hash.Hash)
	mac.Reset()
	_, _ = mac.Write([]byte(token[:len(ownHeader)+1+len(payload)]))
	var got [sha256.Size]byte
	equal := hmac.Equal(mac.Sum(got[:0]), want[:])
	a.macs.Put(mac)
	if !equal {
		return false
	}
	claims, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || !c.decodeFast(claims) && json.Unmarshal(claims, c) != nil {
		return false
	}
	return a.validator.Validate(c) == nil
}

// decodeFast reads the claims tokens carry, plain strings and whole
// seconds under their exact names, in one pass, and reports false for
// anything else (another key, null, an escape, a fraction, a repeated
// key), leaving c as it was for json.Unmarshal to read. What it accepts
// json.Unmarshal reads the same (TestClaimsDecodeFastAgreesWithJSON).
func (c *verified) decodeFast(b []byte) bool {
	var out verified
	str := func(dst *string, at int) (int, bool) { return jsonscan.Text(b, at, dst) }
	secs := func(dst **float64, at int) (int, bool) {
		n, next, ok := jsonscan.Whole(b, at)
		if !ok {
			return 0, false
		}
		f := float64(n)
		*dst = &f
		return next, true
	}
	ok := jsonscan.Object(b, 0, func(key []byte, at int) (int, bool) {
		switch string(key) {
		case "sub":
			return str(&out.Subject, at)
		case "role":
			return str(&out.Role, at)
		case "iss":
			return str(&out.Issuer, at)
		case "aud":
			if at < len(b) && b[at] == '"' {
				var aud string
				next, ok := str(&aud, at)
				out.Audience = jwt.ClaimStrings{aud}
				return next, ok
			}
			ss, next, ok := jsonscan.Strings(b, at)
			if len(ss) > 0 { // an empty list is nil to jwt.ClaimStrings
				out.Audience = ss
			}
			return next, ok
		case "events":
			ss, next, ok := jsonscan.Strings(b, at)
			out.Events = ss
			return next, ok
		case "exp":
			return secs(&out.Expires, at)
		case "iat":
			return secs(&out.Issued, at)
		case "nbf":
			return secs(&out.NotYet, at)
		}
		return 0, false
	})
	if ok {
		*c = out
	}
	return ok
}

// LoadOrCreateSecret returns the secret kept in dir/auth.secret, making a
// random one the first time, so an embedded install keeps its tokens valid
// across restarts without any set-up. A file that others may read is
// anyone's secret: its mode is set to 0600 first (ErrSecretExposed, with
// the secret, says so), or, if that fails, it is refused.
func LoadOrCreateSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, "auth.secret")
	var exposed error
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("auth: %s is readable by others (mode %v) and cannot be made private: %w", path, fi.Mode().Perm(), err)
		}
		exposed = fmt.Errorf("%w: %s was mode %v, now 0600; tokens signed with it may have leaked, consider a new secret", ErrSecretExposed, path, fi.Mode().Perm())
	}
	if b, err := os.ReadFile(path); err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) >= MinSecretLen {
			return []byte(s), exposed
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
