// Command redisclients compares the two maintained Go Redis clients on the
// operation boxoffice's holds are made of: a Lua script doing SET NX PX on a
// hash-tagged key, run by many goroutines at once, as a flash sale does. It
// is its own module so that go-redis stays out of boxoffice's dependencies.
//
//	cd bench/redisclients && go run . -addr 127.0.0.1:6379 -ops 200000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

const script = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0`

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "Redis address")
	ops := flag.Int("ops", 200_000, "script calls per run")
	flag.Parse()
	ctx := context.Background()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{*addr}, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	rs := rueidis.NewLuaScript(script)
	gc := goredis.NewClient(&goredis.Options{Addr: *addr, PoolSize: 256})
	defer gc.Close()
	gs := goredis.NewScript(script)

	var run atomic.Int64
	clients := []struct {
		name string
		call func(key string) error
	}{
		{"rueidis", func(key string) error {
			return rs.Exec(ctx, rc, []string{key}, []string{"o", "60000"}).Error()
		}},
		{"go-redis", func(key string) error {
			return gs.Run(ctx, gc, []string{key}, "o", 60000).Err()
		}},
	}
	fmt.Printf("%-10s %11s %14s\n", "client", "goroutines", "scripts/s")
	for _, g := range []int{8, 64, 256} {
		for _, c := range clients {
			prefix := "redisclients:" + strconv.FormatInt(run.Add(1), 10) + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":{"
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range g {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(*ops) {
							return
						}
						if err := c.call(prefix + strconv.FormatInt(i%1000, 10) + "}:" + strconv.FormatInt(i, 10)); err != nil {
							log.Fatal(c.name, ": ", err)
						}
					}
				})
			}
			wg.Wait()
			fmt.Printf("%-10s %11d %14.0f\n", c.name, g, float64(*ops)/time.Since(start).Seconds())
			// The keys expire in a minute; FLUSH is not ours to call.
		}
	}
}
