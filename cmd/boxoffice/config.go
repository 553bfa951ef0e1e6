package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/node"
	"github.com/boxoffice/boxoffice/sale"
	"golang.org/x/time/rate"
)

// config is every setting of the server, from flags, then environment
// variables BOXOFFICE_<NAME>, then the defaults below.
type config struct {
	Addr           string
	Data           string
	Postgres       string
	Shards         string
	Redis          string
	Kafka          string
	Hold           time.Duration
	PendingGrace   time.Duration
	SeatmapTTL     time.Duration
	CacheEvents    int
	CacheMemory    byteSize
	ReconcileEvery time.Duration
	MaxSeats       int
	NodeID         int
	Demo           bool
	PrintTokens    bool
	SlowPayment    time.Duration
	LogLevel       string
	Workers        int
	KafkaSession   time.Duration
	QueueMaxLive   int
	QueueSlots     int
	DrainPrior     float64
	PreQueue       time.Duration
	Relay          bool
	HandoverGrace  time.Duration
	OfferWindow    time.Duration
	PublicFirst    bool
	ReturnsEvery   time.Duration
	RatePerUser    float64
	RateUserBurst  int
	RatePerAddr    float64
	RateAddrBurst  int
	Metrics        bool
	MetricsAddr    string
	PprofAddr      string
	AuthSecret     string // only from the environment: never a flag, never printed
	Auth           auth.Options
	MaxStreams     int
	MaxInFlight    int
	StreamsPerUser int
	ReadsPerUser   float64
}

// newServeFlagSet declares the server flags, bound to c.
func newServeFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&c.Data, "data", "boxoffice-data", "directory of the embedded database and secret")
	fs.StringVar(&c.Postgres, "postgres", "", "PostgreSQL URL (absent: the embedded SQLite store)")
	fs.StringVar(&c.Shards, "postgres-shards", "", "URLs of the other PostgreSQL shards, space-separated, in shard order (1, 2, ...): events are spread over --postgres (the directory, shard 0) and these; give every process the same list")
	fs.StringVar(&c.Redis, "redis", "", "Redis URL or comma-separated cluster nodes (absent: in-process holds)")
	fs.StringVar(&c.Kafka, "kafka", "", "Kafka brokers (absent: the embedded queue)")
	fs.DurationVar(&c.Hold, "hold", 10*time.Minute, "how long a reserve holds its seats")
	fs.DurationVar(&c.PendingGrace, "pending-grace", 5*time.Minute, "how long after its hold ran out the reconciler marks a pending booking expired")
	fs.DurationVar(&c.SeatmapTTL, "seatmap-ttl", 10*time.Second, "how long a seat-map snapshot is served (also its Cache-Control max-age)")
	fs.IntVar(&c.CacheEvents, "cache-events", 1000, "events each in-process cache keeps (layouts, seat maps, inventories, queue rates): the least recently used go first")
	c.CacheMemory = 1 << 30
	fs.Var(&c.CacheMemory, "cache-memory", "bytes the seat maps and layouts cached in this process may take, e.g. 512MiB or 2GiB (0: only --cache-events bounds them)")
	fs.DurationVar(&c.ReconcileEvery, "reconcile-every", 30*time.Second, "interval of the reconciler")
	fs.IntVar(&c.MaxSeats, "max-seats-per-request", 10, "cap on the seats of one reserve request")
	fs.IntVar(&c.NodeID, "node-id", 0, "a fixed Snowflake node id (0-1023), unique per process sharing a database; unset with --postgres: leased from PostgreSQL")
	fs.BoolVar(&c.Demo, "demo", true, "create a demo event when the store has no events")
	fs.StringVar(&c.Auth.Audience, "auth-audience", "", "the aud a token must carry (checked when set; boxoffice token puts it in)")
	fs.StringVar(&c.Auth.Issuer, "auth-issuer", "", "the iss a token must carry (checked when set; boxoffice token puts it in)")
	fs.DurationVar(&c.Auth.MaxLifetime, "auth-max-lifetime", auth.DefaultMaxLifetime, "the longest a token may live (exp - iat); longer ones are refused")
	fs.IntVar(&c.MaxStreams, "max-streams", 10000, "live status streams (SSE) this process serves at once; past it 429")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", httpapi.DefaultInFlight(), "requests this process handles at once (live streams aside; 16 per core by default); the others wait their turn in arrival order (0: no bound)")
	fs.IntVar(&c.StreamsPerUser, "streams-per-user", 4, "live status streams one user may hold open at once; past it 429")
	fs.Float64Var(&c.ReadsPerUser, "rate-reads-per-user", 100, "reads (GET) per second per user; their burst is 4 times this (0: unlimited)")
	fs.BoolVar(&c.PrintTokens, "print-tokens", true, "print sign-in tokens at start (only ever for the embedded store on a loopback address)")
	fs.DurationVar(&c.SlowPayment, "slow-payment", 3*time.Second, "how long the test token tok_slow takes")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&c.Workers, "workers", 1, "booking workers draining the flash-sale queue in this process (0: none; see boxoffice worker)")
	fs.IntVar(&c.QueueMaxLive, "queue-max-live", 1, "queued requests one user may have waiting per event")
	fs.IntVar(&c.QueueSlots, "queue-slots", 1, "Redis hash slots each new queued event's queue is spread over (1-64; with --kafka): more than one lets a hot event's admissions use several Redis Cluster primaries; keep it the same on every process")
	fs.Float64Var(&c.DrainPrior, "queue-drain-prior", 2000, "drain rate (requests/s) wait estimates assume until one is measured, and the least capacity they assume during a burst of arrivals: set it to the deployment's drain as the drill measures it")
	fs.DurationVar(&c.PreQueue, "prequeue-window", time.Hour, "how long before a queued sale opens its waiting room takes requests")
	fs.DurationVar(&c.KafkaSession, "kafka-session-timeout", 10*time.Second, "how long a silent booking worker keeps its partitions before the group hands them to another (Kafka's session.timeout.ms)")
	fs.BoolVar(&c.Relay, "relay", true, "run the outbox relay, the returns pass and the reconciler in this process (see boxoffice relay)")
	fs.DurationVar(&c.HandoverGrace, "handover-grace", 30*time.Second, "how much longer than its booking a seat hold lasts, so returned seats pass to the waitlist before anyone else can take them")
	fs.DurationVar(&c.OfferWindow, "offer-window", 10*time.Minute, "how long a waitlist offer holds its seats for the user")
	fs.BoolVar(&c.PublicFirst, "public-first", false, "give returned seats back to the public at once instead of offering them to the waitlist first")
	fs.DurationVar(&c.ReturnsEvery, "returns-every", time.Second, "interval of the returns pass (expired holds and returned seats to the waitlist)")
	fs.Float64Var(&c.RatePerUser, "rate-per-user", 10, "state-changing requests per second one user may make, per process (0: no limit)")
	fs.IntVar(&c.RateUserBurst, "rate-user-burst", 40, "how many of them may come at once")
	fs.Float64Var(&c.RatePerAddr, "rate-per-address", 0, "requests per second one remote address may make, per process (0: no limit; a load test from one address needs 0)")
	fs.IntVar(&c.RateAddrBurst, "rate-address-burst", 200, "how many of them may come at once")
	fs.BoolVar(&c.Metrics, "metrics", true, "serve Prometheus metrics at /metrics (to an organiser's token on the API's address, or see --metrics-addr)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics on this address alone, without a token (a private network's scraper), instead of on the API's")
	fs.StringVar(&c.PprofAddr, "pprof-addr", "", "serve Go's runtime profiles at /debug/pprof/ on this address, without a token (loopback or a private network only)")
	return fs
}

// parseFlags parses args, then fills every flag not given on the command
// line from its BOXOFFICE_<NAME> environment variable.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %v", envName(f.Name), v, e)
			}
		}
	})
	return err
}

func envName(flagName string) string {
	return "BOXOFFICE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// usage prints a command's flags with their defaults and variables.
func usage(w io.Writer, fs *flag.FlagSet, head string) func() {
	return func() {
		fmt.Fprintln(w, head)
		fs.VisitAll(func(f *flag.Flag) {
			def := f.DefValue
			if def == "" {
				def = `""`
			}
			fmt.Fprintf(w, "  --%-22s %s\n  %-24s default %s, env %s\n", f.Name, f.Usage, "", def, envName(f.Name))
		})
	}
}

// print writes the effective configuration at start, secrets masked.
func (c config) print(w io.Writer) {
	mask := func(s string) string {
		if s == "" {
			return "(embedded)"
		}
		if i := strings.Index(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "***" + s[i:]
			}
		}
		return s
	}
	var shards []string
	for _, u := range strings.Fields(c.Shards) {
		shards = append(shards, mask(u))
	}
	fmt.Fprintf(w, "config: addr=%s data=%s postgres=%s postgres-shards=%q redis=%s kafka=%s hold=%s pending-grace=%s seatmap-ttl=%s node-id=%d auth-secret=%s\n",
		c.Addr, c.Data, mask(c.Postgres), strings.Join(shards, " "), mask(c.Redis), mask(c.Kafka), c.Hold, c.PendingGrace, c.SeatmapTTL, c.NodeID,
		map[bool]string{true: "(from BOXOFFICE_AUTH_SECRET)", false: "(kept in the data directory)"}[c.AuthSecret != ""])
}

// options are the node's options from c: its parts, policy, limits and
// intervals; the caller sets the roles.
func (c config) options(log *slog.Logger, a *auth.Authenticator, fixedNodeID bool) node.Options {
	return node.Options{
		Data: c.Data, Postgres: c.Postgres, Shards: strings.Fields(c.Shards), Redis: c.Redis, Kafka: c.Kafka,
		NodeID: c.NodeID, FixedNodeID: fixedNodeID, QueueSlots: c.QueueSlots, KafkaSession: c.KafkaSession,
		Sale: sale.Config{HoldTTL: c.Hold, PendingGrace: c.PendingGrace, MaxSeatsPerRequest: c.MaxSeats,
			MaxLivePerUser: c.QueueMaxLive, PreQueueWindow: c.PreQueue, HandoverGrace: c.HandoverGrace,
			OfferWindow: c.OfferWindow, PublicFirst: c.PublicFirst, DrainPrior: c.DrainPrior, CacheEvents: c.CacheEvents},
		SeatmapTTL: c.SeatmapTTL, SlowPayment: c.SlowPayment, CacheMemory: int64(c.CacheMemory),
		Auth: a,
		Limits: httpapi.Limits{PerUser: rate.Limit(c.RatePerUser), UserBurst: c.RateUserBurst,
			ReadsPerUser: rate.Limit(c.ReadsPerUser), PerAddress: rate.Limit(c.RatePerAddr), AddressBurst: c.RateAddrBurst,
			Streams: c.MaxStreams, StreamsPerUser: c.StreamsPerUser, InFlight: c.MaxInFlight},
		Metrics: c.Metrics, MetricsSeparate: c.MetricsAddr != "",
		ReturnsEvery: c.ReturnsEvery, ReconcileEvery: c.ReconcileEvery,
		Log: log,
	}
}

// byteSize is a flag of bytes: a number with an optional unit (B, KB, MB,
// GB, KiB, MiB, GiB).
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a number of bytes, e.g. 512MiB", s)
	}
	units := map[string]int64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
	u, ok := units[strings.ToUpper(strings.TrimSpace(t[i:]))]
	if !ok {
		return fmt.Errorf("%q: unknown unit (B, KB, MB, GB, KiB, MiB, GiB)", s)
	}
	*b = byteSize(n * u)
	return nil
}
