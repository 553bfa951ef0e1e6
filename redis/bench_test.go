package redis

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
)

// The benchmarks take holds on distinct seats with 64 concurrent callers,
// against BOXOFFICE_TEST_REDIS (which may name a cluster's nodes too), and
// report ops/s (holds granted per second) and seats/s. Compare them with
// the raw ceiling of the same server, measured in the same run:
//
//	redis-benchmark -q -n 200000 -c 50 -t set
//	redis-benchmark -q -n 200000 -c 50 -r 1000000 SET boxoffice-bench:k:__rand_int__ v NX PX 600000
//	go test -c -o /tmp/redis.test ./redis
//	/tmp/redis.test -test.run '^$' -test.bench Hold -test.benchtime 100000x -test.count 3
//
// One run (a 2-core AMD EPYC VM, Redis 7.0.15, client and server on
// the same two cores, a machine shared with other work, so ±15%):
//
//	                           single server 127.0.0.1:6379     6-node cluster (3 primaries + 3 replicas)
//	raw SET (-t set)           79,000-83,000/s                  46,700/s (redis-benchmark --cluster)
//	raw SET NX PX __rand_int__ 71,000-88,000/s                  n/a (redis-benchmark cannot route it)
//	BenchmarkHold1             55,000-74,500 holds/s            33,900 holds/s
//	BenchmarkHold4             33,000-48,000 holds/s            16,900 holds/s
//	                           (131,000-192,000 seats/s)        (67,500 seats/s)
//	BenchmarkHold4Sections     10,500-12,600 holds/s            4,700 holds/s
//
// So a one-seat hold (an EVALSHA doing TIME, two GETs, two SETs) runs at
// about 0.85 of a bare SET NX PX; four seats in one section at about half
// the hold rate but twice the seat rate; four sections cost four sequential
// scripts plus the promote, about a quarter of the one-section rate.
//
// The drain (BenchmarkAcquireMany: one caller, batches of 500 one-seat
// requests over 10 sections, half of them refused), on another 2-core VM
// (Redis 7.0.15, client and server sharing the cores), where raw SET
// (-t set) made 46,500/s and BenchmarkHold1 20,000-24,000 holds/s:
//
//	                            single server          3-primary cluster
//	BenchmarkAcquireMany        68,000-83,000/s        105,500/s        decisions (half are holds)
//	BenchmarkAcquireManyInTurn  7,300-9,100/s          13,000/s         decisions, Acquire one by one
//
// A batch is one round trip; the server spends about 300 µs on each
// section's script (50 requests), so one drain decides faster than 50
// clients run bare SETs, and nine times as fast as Acquire in turn.

func BenchmarkHold1(b *testing.B) { benchHold(b, 1, 1) }

func BenchmarkHold4(b *testing.B) { benchHold(b, 4, 1) }

// BenchmarkHold4Sections is the cross-section path: four sequential acquire
// scripts and one pipelined promote.
func BenchmarkHold4Sections(b *testing.B) { benchHold(b, 4, 4) }

// callers is how many goroutines take holds at once.
const callers = 64

func benchHold(b *testing.B, seats, sections int) {
	h := benchHolds(b)
	event := newID()
	var next atomic.Int64
	var failed atomic.Int64

	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		ids := make([]string, seats)
		for pb.Next() {
			n := int(next.Add(1))
			// Spread the holds over 64 sections, hence slots (and shards).
			for i := range ids {
				sec := "S" + strconv.Itoa((n+i*(64/sections))%64)
				if sections == 1 {
					sec = "S" + strconv.Itoa(n%64)
				}
				ids[i] = sec + "-A-" + strconv.Itoa(n*seats+i)
			}
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: ids, Owner: boxoffice.ID(n), TTL: 5 * time.Minute})
			if err != nil {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Errorf("%d of %d holds failed", f, b.N)
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/secs, "ops/s")
	b.ReportMetric(float64(b.N*seats)/secs, "seats/s")
}

// BenchmarkAcquireMany is the queue's drain: one caller deciding batches of
// manyBatch one-seat requests over manySections sections, every seat wanted
// twice, so half the requests are refused. decisions/s counts both.
func BenchmarkAcquireMany(b *testing.B) { benchMany(b, true) }

// BenchmarkAcquireManyInTurn is the same drain calling Acquire for each
// request in turn, what AcquireMany saves.
func BenchmarkAcquireManyInTurn(b *testing.B) { benchMany(b, false) }

const (
	manyBatch    = 500
	manySections = 10
)

func benchMany(b *testing.B, batched bool) {
	h := benchHolds(b)
	event := newID()
	ctx := context.Background()
	reqs := make([]boxoffice.HoldRequest, manyBatch)
	granted := 0
	b.ResetTimer()
	for n := range b.N {
		for i := range reqs {
			k := n*manyBatch/2 + i%(manyBatch/2) // request i and i+manyBatch/2 want the same seat
			seat := "S" + strconv.Itoa(k%manySections) + "-A-" + strconv.Itoa(k)
			reqs[i] = boxoffice.HoldRequest{EventID: event, SeatIDs: []string{seat}, Owner: boxoffice.ID(n*manyBatch + i + 1), TTL: 5 * time.Minute}
		}
		var errs []error
		if batched {
			_, errs = h.AcquireMany(ctx, reqs)
		} else {
			errs = make([]error, len(reqs))
			for i, req := range reqs {
				_, errs[i] = h.Acquire(ctx, req)
			}
		}
		for _, err := range errs {
			switch boxoffice.ErrorCode(err) {
			case "":
				granted++
			case boxoffice.ESEATTAKEN:
			default:
				b.Fatalf("request refused with %v", err)
			}
		}
	}
	b.StopTimer()
	if granted != b.N*manyBatch/2 {
		b.Errorf("%d of %d requests granted, want half", granted, b.N*manyBatch)
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*manyBatch)/secs, "decisions/s")
	b.ReportMetric(float64(granted)/secs, "holds/s")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// BenchmarkAdmit is the front door of one hot event: admitters callers
// deciding batches of admitBatch fresh users' requests at once
// (AdmitMany, as package sale's admitters do), with the event's queue in
// one slot or spread over three. On a 3-primary cluster the three slots'
// scripts run on three primaries in parallel; on one server they share
// it. Compare admissions/s of Slots1 and Slots3 on the cluster:
//
//	scripts/redis-cluster.sh start /tmp/rc
//	BOXOFFICE_TEST_REDIS=127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002 \
//	  go test ./redis -run '^$' -bench Admit -benchtime 400x -count 3
func BenchmarkAdmit(b *testing.B) {
	for _, slots := range []int{1, 3} {
		b.Run("Slots"+strconv.Itoa(slots), func(b *testing.B) { benchAdmit(b, slots) })
	}
}

const (
	admitters  = 8
	admitBatch = 256
)

func benchAdmit(b *testing.B, slots int) {
	q := benchQueue(b)
	q.Slots = slots
	ctx := context.Background()
	event := newID()
	if ok, err := q.Init(ctx, event, nil); err != nil || !ok {
		b.Fatalf("Init: %v %v", ok, err)
	}
	var next, failed atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((admitters + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		as := make([]boxoffice.Admission, admitBatch)
		for pb.Next() {
			for i := range as {
				n := next.Add(1)
				id := boxoffice.ID(n)
				as[i] = boxoffice.Admission{MaxLive: 1, Request: &boxoffice.QueuedRequest{ID: id, EventID: event,
					UserID: "fan-" + strconv.FormatInt(n, 10), SeatIDs: []string{"A-A-1"}, IdempotencyKey: "k",
					RequestHash: "h", EnqueuedAt: time.Now()}}
			}
			out, err := q.AdmitMany(ctx, as)
			if err != nil {
				failed.Add(admitBatch)
				continue
			}
			for _, o := range out {
				if o.Err != nil || o.Replay {
					failed.Add(1)
				}
			}
		}
	})
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Errorf("%d of %d admissions failed", f, b.N*admitBatch)
	}
	b.ReportMetric(float64(b.N*admitBatch)/b.Elapsed().Seconds(), "admissions/s")
}

// benchQueue returns a QueueState on BOXOFFICE_TEST_REDIS under a fresh
// prefix, whose keys are deleted after the benchmark.
func benchQueue(b *testing.B) *QueueState {
	client := benchClient(b)
	return NewQueueState(client, newPrefix(b, client))
}

// benchHolds returns Holds on BOXOFFICE_TEST_REDIS under a fresh prefix,
// whose keys are deleted after the benchmark.
func benchHolds(b *testing.B) *Holds {
	client := benchClient(b)
	return NewHolds(client, newPrefix(b, client))
}

func benchClient(b *testing.B) rueidis.Client {
	addr := envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0")
	client, err := Dial(addr)
	if err != nil {
		if envOr("CI", "") == "true" {
			b.Fatalf("Redis at %s: %v", addr, err)
		}
		b.Skipf("Redis at %s: %v", addr, err)
	}
	b.Cleanup(client.Close) // after the keys' cleanup, which newPrefix registers next
	return client
}
