package apitest

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/internal/proccpu"
	"github.com/redis/rueidis"
)

// cpuUse is the CPU this process, the Redis server and every PostgreSQL
// process have used: a benchmark's figure per operation that a noisy
// machine moves far less than its rate (the same drain ran at 11,800 to
// 19,200 decisions/s in one sitting).
type cpuUse struct {
	self, redis, postgres time.Duration
	servers               bool // Redis and PostgreSQL were read
}

// readCPU reads the use so far; with a nil client (the embedded default)
// only this process's.
func readCPU(client rueidis.Client) cpuUse {
	var u cpuUse
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if client == nil {
		return u
	}
	u.servers = true
	if info, err := client.Do(ctx, client.B().Info().Section("cpu").Build()).ToString(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				s, _ := strconv.ParseFloat(v, 64)
				u.redis += time.Duration(s * float64(time.Second))
			}
		}
	}
	// Every postgres process's: the backends that serve the benchmark and
	// the writers that flush for them.
	u.postgres = proccpu.Named("postgres")
	return u
}

// report reports the CPU used since u, per op of n; Redis's and
// PostgreSQL's only if u read them (a client).
func (u cpuUse) report(b *testing.B, now cpuUse, n int, op string) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(per(now.self-u.self), "process-µs/"+op)
	if u.servers {
		b.ReportMetric(per(now.redis-u.redis), "redis-µs/"+op)
		b.ReportMetric(per(now.postgres-u.postgres), "pg-µs/"+op)
	}
}
