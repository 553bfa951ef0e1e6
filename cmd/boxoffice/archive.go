package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

const archiveUsage = `Usage: boxoffice archive --postgres URL --before YYYY-MM-DD --to DIR [--dry-run]
       boxoffice archive restore --postgres URL --from DIR/<partition>

archive moves each month partition of past shows (every show of it started
before --before, and the month ends by then) out of PostgreSQL into
DIR/<partition>/: one CSV file per table and manifest.json, verified before
the partition is dropped. restore puts one back.`

// archive exports and drops the partitions of past shows
// (postgres.ArchivePartition), or restores one ("archive restore").
func archive(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "restore" {
		return archiveRestore(ctx, args[1:], getenv, stdout, stderr)
	}
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("postgres", "", "PostgreSQL URL (required)")
	beforeDay := fs.String("before", "", "archive the months whose shows all started before this day, YYYY-MM-DD UTC (required)")
	to := fs.String("to", "", "directory to write the archives to, one subdirectory per partition (required unless --dry-run)")
	dryRun := fs.Bool("dry-run", false, "list the partitions that would be archived, archive none")
	fs.Usage = usage(stderr, fs, archiveUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	before, err := checkArchiveFlags(fs, *url, *beforeDay, *to, *dryRun, time.Now())
	if err != nil {
		return err
	}
	st, err := postgres.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer st.Close()
	parts, err := st.Partitions(ctx)
	if err != nil {
		return err
	}

	// A partition goes when its range ends by before (no show of it can
	// start later) and every show in it started before.
	bound := postgres.EventIDAt(before)
	var due []postgres.Partition
	for _, p := range parts {
		verdict := "archive"
		switch {
		case p.Hi > bound:
			verdict = "keep: its range ends after --before"
		case p.Events > 0 && !p.LastShow.Before(before):
			verdict = "keep: a show starts " + p.LastShow.Format("2006-01-02 15:04") + ", not before --before"
		default:
			due = append(due, p)
		}
		fmt.Fprintf(stdout, "partition %-10s shows %s  %d events%s  %s\n", p.Suffix, showRange(p.Lo, p.Hi), p.Events, lastShow(p), verdict)
	}
	if *dryRun {
		fmt.Fprintf(stdout, "dry run: %d of %d partitions would be archived to %s\n", len(due), len(parts), orNone(*to))
		return nil
	}
	events := 0
	for i, p := range due {
		m, err := st.ArchivePartition(ctx, p.Suffix, *to, before)
		if err != nil {
			return fmt.Errorf("archiving partition %s (%d archived before it, the rest kept): %w", p.Suffix, i, err)
		}
		fmt.Fprintf(stdout, "archived partition %s: %d events, to %s\n", m.Suffix, m.Events, m.Dir)
		printTables(stdout, m)
		events += m.Events
	}
	fmt.Fprintf(stdout, "archived %d partitions, %d events, to %s\n", len(due), events, *to)
	return nil
}

// checkArchiveFlags validates archive's flags before anything is opened
// and returns --before as midnight UTC.
func checkArchiveFlags(fs *flag.FlagSet, url, beforeDay, to string, dryRun bool, now time.Time) (time.Time, error) {
	if fs.NArg() > 0 {
		fs.Usage()
		return time.Time{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if url == "" {
		fs.Usage()
		return time.Time{}, errors.New("--postgres is required")
	}
	if beforeDay == "" {
		fs.Usage()
		return time.Time{}, errors.New("--before is required")
	}
	before, err := time.Parse(time.DateOnly, beforeDay)
	if err != nil {
		return time.Time{}, fmt.Errorf("--before %q is not a day YYYY-MM-DD", beforeDay)
	}
	if before.After(now) {
		return time.Time{}, fmt.Errorf("--before %s is in the future: only shows that have started can be archived", beforeDay)
	}
	if to == "" && !dryRun {
		fs.Usage()
		return time.Time{}, errors.New("--to is required (or --dry-run)")
	}
	return before, nil
}

// archiveRestore puts back one archived partition.
func archiveRestore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("archive restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("postgres", "", "PostgreSQL URL (required)")
	from := fs.String("from", "", "an archived partition's directory, DIR/<partition> (required)")
	fs.Usage = usage(stderr, fs, archiveUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *url == "":
		fs.Usage()
		return errors.New("--postgres is required")
	case *from == "":
		fs.Usage()
		return errors.New("--from is required")
	}
	st, err := postgres.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer st.Close()
	m, err := st.RestorePartition(ctx, *from)
	if err != nil {
		return fmt.Errorf("restoring %s: %w", *from, err)
	}
	fmt.Fprintf(stdout, "restored partition %s (shows %s): %d events, from %s\n", m.Suffix, showRange(m.Lo, m.Hi), m.Events, m.Dir)
	printTables(stdout, m)
	return nil
}

func printTables(w io.Writer, m *postgres.ArchiveManifest) {
	for _, t := range m.Tables {
		fmt.Fprintf(w, "  %-17s %8d rows  %s\n", t.Table, t.Rows, filepath.Join(m.Dir, t.File))
	}
}

// showRange is the show starts of event ids [lo, hi).
func showRange(lo *int64, hi int64) string {
	from := "start"
	if lo != nil {
		from = idTime(*lo).Format(time.DateOnly)
	}
	return "[" + from + ", " + idTime(hi).Format(time.DateOnly) + ")"
}

func idTime(id int64) time.Time {
	t, _, _ := snowflake.Parts(boxoffice.ID(id))
	return t
}

func lastShow(p postgres.Partition) string {
	if p.Events == 0 {
		return ""
	}
	return ", last show " + p.LastShow.Format("2006-01-02 15:04")
}

func orNone(s string) string {
	if s == "" {
		return "(no --to)"
	}
	return s
}
