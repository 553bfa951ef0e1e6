package faulttest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/auth"
)

var (
	durationFlag = flag.Duration("fault.duration", 0, "how long the load runs under faults (default 75s; env BOXOFFICE_FAULT_DURATION)")
	usersFlag    = flag.Int("fault.users", 0, "concurrent users of the workload (default 40; env BOXOFFICE_FAULT_USERS)")
	logsFlag     = flag.String("fault.logs", "", "keep the process logs in this directory (env BOXOFFICE_FAULT_LOGS)")
)

// Bounds of the phases after the load.
const (
	quiesceQueue    = 60 * time.Second // every 202 final
	quiesceOutbox   = 30 * time.Second // every booking event published
	quiescePayments = 75 * time.Second // a capture lost to a crash is redone a minute later
)

func settings(t *testing.T) (d time.Duration, users int, logDir string, keep bool) {
	d = 75 * time.Second
	if v := os.Getenv("BOXOFFICE_FAULT_DURATION"); v != "" {
		x, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BOXOFFICE_FAULT_DURATION=%q: %v", v, err)
		}
		d = x
	}
	if *durationFlag != 0 {
		d = *durationFlag
	}
	if d < 30*time.Second || d > 50*time.Minute {
		t.Fatalf("fault duration %s: want 30s to 50m", d)
	}
	users = 40
	if v := os.Getenv("BOXOFFICE_FAULT_USERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BOXOFFICE_FAULT_USERS=%q: want a positive number", v)
		}
		users = n
	}
	if *usersFlag > 0 {
		users = *usersFlag
	}
	logDir = os.Getenv("BOXOFFICE_FAULT_LOGS")
	if *logsFlag != "" {
		logDir = *logsFlag
	}
	keep = logDir != ""
	if !keep {
		logDir = t.TempDir()
	} else {
		logDir = filepath.Join(logDir, time.Now().Format("20060102-150405"))
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d, users, logDir, keep
}

// TestFaultSchedule is issue 12: the production topology under a schedule
// of faults, then healed and audited. See docs/reliability.md.
func TestFaultSchedule(t *testing.T) { faultSchedule(t, 1) }

// TestFaultScheduleSharded is the same on PostgreSQL sharded by event over
// two clusters (issue 18): the PostgreSQL faults stop the directory, shard
// 0, which also leases the node ids; the audit reads both shards as one
// (topology.auditURL).
func TestFaultScheduleSharded(t *testing.T) { faultSchedule(t, 2) }

func faultSchedule(t *testing.T, shards int) {
	if testing.Short() {
		t.Skip("starts the production topology as processes")
	}
	began := time.Now()
	d, users, logDir, keep := settings(t)
	top := startTopology(t, logDir, shards)
	setup := time.Since(began)
	if top.pg == nil {
		t.Logf("NOTE: no PostgreSQL cluster of its own (%s): the machine's server is used, the PostgreSQL faults are skipped", top.pgNote)
	} else {
		t.Logf("PostgreSQL cluster %s/%s on 127.0.0.1:%d", top.pg.Version(), top.pg.Name(), top.pg.Port())
	}
	t.Logf("topology up in %s: redis %s, kafka-fake %s, APIs %v; logs in %s", setup.Round(time.Millisecond),
		top.redisAt, top.seeds, top.apiURLs, logDir)

	a, err := auth.New([]byte(authSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := a.Issue("organiser", "admin", 6*time.Hour)
	l := newLoad(top.apiURLs, a)
	l.cycle, l.cycles = cycleLen, max(1, int(d/cycleLen))
	l.t0 = time.Now().Add(3 * time.Second)
	if err := l.createEvents(admin, l.cycles, cycleLen); err != nil {
		t.Fatal(err)
	}
	inj := plan(top, d)
	t.Logf("fault schedule (load %s, %d users, %d cycle(s) of %s; hold %s, Kafka session %s, SIGSTOP %s):\n%s",
		d, users, l.cycles, cycleLen, holdTTL, kafkaSession, stopFor, inj.describe(d, l.events, l.t0))

	time.Sleep(time.Until(l.t0))
	injDone := make(chan struct{})
	stopInj := make(chan struct{})
	go func() {
		defer close(injDone)
		inj.run(l.t0, stopInj)
	}()
	wg := l.run(users)
	time.Sleep(time.Until(l.t0.Add(d)))
	l.stopped.Store(true)
	close(l.stop)
	close(stopInj)
	<-injDone
	usersDone := make(chan struct{})
	go func() { wg.Wait(); close(usersDone) }()
	select {
	case <-usersDone:
	case <-time.After(2 * clientTimeout):
		t.Errorf("the workload did not stop within %s", 2*clientTimeout)
	}
	loadEnd := time.Now()

	// Heal, then wait for quiescence (each wait bounded).
	healed := top.heal()
	inj.closeAll()
	t.Logf("executed schedule:\n%s  heal at +%.1fs: %v", inj.executed(), time.Since(l.t0).Seconds(), healed)
	if err := top.readyAll(60 * time.Second); err != nil {
		t.Errorf("after healing: %v", err)
	}
	finals := l.finalReads(time.Now().Add(quiesceQueue))
	queueDone := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	auditURL, err := top.auditURL(ctx)
	if err != nil {
		t.Fatalf("audit database: %v", err)
	}
	db, err := pgx.Connect(ctx, auditURL)
	if err != nil {
		t.Fatalf("audit connection: %v", err)
	}
	defer db.Close(context.Background())
	if shards > 1 {
		// The sale's events were spread: a queued sale is hot and gets a
		// shard of its own, the direct sales go to the other.
		var perShard []int
		for i := range shards {
			table := "public.events"
			if i > 0 {
				table = fmt.Sprintf("shard%d.events", i)
			}
			var n int
			if err := db.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
				t.Fatalf("count %s: %v", table, err)
			}
			perShard = append(perShard, n)
		}
		t.Logf("events per shard: %v", perShard)
		if slices.Contains(perShard, 0) {
			t.Errorf("events per shard = %v: a shard was left out", perShard)
		}
	}
	outboxLeft := waitOutbox(ctx, db, time.Now().Add(quiesceOutbox))
	waitCaptures(ctx, db, time.Now().Add(quiescePayments))
	quiesced := time.Now()

	au := &auditor{ctx: ctx, db: db, top: top, inj: inj, l: l, recs: l.records(), finals: finals, admin: admin, fresh: quiesced}
	for _, f := range finals {
		au.recs = append(au.recs, f)
	}
	results := []result{
		au.noDoubleSale(),
		au.confirmsValid(),
		au.unchargedTruth(),
		au.queueFinal(),
		au.payments(),
		au.seatMaps(),
		au.kafkaConfirmed(outboxLeft),
		au.idsUnique(),
		au.bookingsInStore(),
		au.no500(),
		au.redisOutage(),
		au.workloadInfo(),
		au.postgresInfo(),
		au.nodeIDInfo(),
	}
	t.Logf("timing: setup %s, load %s, stop %s, queue final %s, outbox/payments/seat map %s, checks %s; total %s",
		setup.Round(time.Millisecond), d, loadEnd.Sub(l.t0.Add(d)).Round(time.Millisecond),
		queueDone.Sub(loadEnd).Round(time.Millisecond), quiesced.Sub(queueDone).Round(time.Millisecond),
		time.Since(quiesced).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	t.Logf("checks (%s, load %s):%s%s", time.Now().UTC().Format(time.RFC3339), d, table(results), evidence(results))
	if keep {
		// Everything the clients were told, one JSON object a line, and
		// the table, beside the process logs.
		var b strings.Builder
		enc := json.NewEncoder(&b)
		for _, x := range au.recs {
			_ = enc.Encode(x)
		}
		_ = os.WriteFile(filepath.Join(logDir, "answers.jsonl"), []byte(b.String()), 0o644)
		_ = os.WriteFile(filepath.Join(logDir, "checks.md"), []byte(table(results)+evidence(results)), 0o644)
	}
	failed := 0
	for _, r := range results {
		if !r.Info && !r.Pass {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d checks failed (table above; process logs in %s)", failed, len(results)-3, logDir)
	}
}

// waitOutbox waits until the relay has published every outbox row, and
// returns how many were left at the deadline.
func waitOutbox(ctx context.Context, db *pgx.Conn, deadline time.Time) int {
	for {
		var n int
		err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n)
		if (err == nil && n == 0) || time.Now().After(deadline) {
			if err != nil {
				return -1
			}
			return n
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitCaptures waits until no confirmed booking's payment is left only
// authorized. The reconciler captures those a minute after the confirm
// (a crash between the commit and the capture), so the wait is bounded
// by the youngest such payment plus that minute, and by deadline.
func waitCaptures(ctx context.Context, db *pgx.Conn, deadline time.Time) {
	for {
		var n int
		err := db.QueryRow(ctx, `SELECT count(*) FROM payments p JOIN bookings b ON b.id = p.booking_id
			WHERE b.status = 'confirmed' AND p.status = 'authorized'`).Scan(&n)
		if err != nil || n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
