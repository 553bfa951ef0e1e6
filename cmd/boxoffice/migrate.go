package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/boxoffice/boxoffice/postgres"
)

// migrate applies the PostgreSQL migrations and exits. serve does the same
// at start; the advisory lock in postgres.Migrate makes concurrent starts
// safe, and this command lets a deploy run them once, up front.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("postgres", "", "PostgreSQL URL (required)")
	fs.Usage = usage(stderr, fs, "Usage: boxoffice migrate --postgres URL")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *url == "" {
		fs.Usage()
		return errors.New("--postgres is required (the embedded store migrates itself at start)")
	}
	st, err := postgres.Open(ctx, *url) // Open applies pending migrations
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
