package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
)

// token prints a bearer token signed with the server's secret: the one in
// BOXOFFICE_AUTH_SECRET, or the one the embedded server keeps in --data.
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sub := fs.String("sub", "", "the user id (required)")
	role := fs.String("role", "", `"admin" for an organiser; empty for a customer`)
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	events := fs.String("events", "", "comma-separated event ids the token is scoped to (an organiser or staff of those events alone)")
	var o auth.Options
	fs.StringVar(&o.Audience, "auth-audience", "", "the aud to put in (the server's --auth-audience)")
	fs.StringVar(&o.Issuer, "auth-issuer", "", "the iss to put in (the server's --auth-issuer)")
	fs.DurationVar(&o.MaxLifetime, "auth-max-lifetime", auth.DefaultMaxLifetime, "the server's --auth-max-lifetime")
	data := fs.String("data", "boxoffice-data", "data directory whose secret to use when BOXOFFICE_AUTH_SECRET is unset")
	fs.Usage = usage(stderr, fs, "Usage: boxoffice token --sub ID [--role admin|staff] [--ttl 24h] [--events ID,ID]")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *sub == "" {
		fs.Usage()
		return fmt.Errorf("--sub is required")
	}
	var scope []boxoffice.ID
	for _, e := range strings.Split(*events, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		id, err := boxoffice.ParseID(e)
		if err != nil {
			return fmt.Errorf("--events: %q is not an event id", e)
		}
		scope = append(scope, id)
	}
	a, err := authenticator(getenv("BOXOFFICE_AUTH_SECRET"), *data, o, nil)
	if err != nil {
		return err
	}
	t, err := a.IssueScoped(*sub, *role, *ttl, scope)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t)
	return nil
}

// authenticator returns the tokens' authenticator: the secret from the
// environment or the data directory's, and what tokens must say.
func authenticator(secret, dataDir string, o auth.Options, log *slog.Logger) (*auth.Authenticator, error) {
	key := []byte(secret)
	if secret == "" {
		var err error
		key, err = auth.LoadOrCreateSecret(dataDir)
		switch {
		case errors.Is(err, auth.ErrSecretExposed) && log != nil:
			log.Warn("auth secret", "problem", err.Error())
		case errors.Is(err, auth.ErrSecretExposed):
		case err != nil:
			return nil, err
		}
	}
	a, err := auth.New(key, nil)
	if err != nil {
		return nil, err
	}
	a.Require(o)
	return a, nil
}
