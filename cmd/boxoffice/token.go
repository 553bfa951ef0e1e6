package main

import (
	"flag"
	"fmt"
	"io"
	"time"

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
	data := fs.String("data", "boxoffice-data", "data directory whose secret to use when BOXOFFICE_AUTH_SECRET is unset")
	fs.Usage = usage(stderr, fs, "Usage: boxoffice token --sub ID [--role admin] [--ttl 24h]")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *sub == "" {
		fs.Usage()
		return fmt.Errorf("--sub is required")
	}
	a, err := authenticator(getenv("BOXOFFICE_AUTH_SECRET"), *data)
	if err != nil {
		return err
	}
	t, err := a.Issue(*sub, *role, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t)
	return nil
}

func authenticator(secret, dataDir string) (*auth.Authenticator, error) {
	key := []byte(secret)
	if secret == "" {
		var err error
		if key, err = auth.LoadOrCreateSecret(dataDir); err != nil {
			return nil, err
		}
	}
	return auth.New(key, nil)
}
