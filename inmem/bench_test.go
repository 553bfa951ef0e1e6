package inmem

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The uncontended benchmarks give every goroutine its own section of one
// event (one hot event, as in a flash sale) and make every op a real
// grant: an op acquires a free seat (or seats) and releases the hold taken
// window ops earlier, so about window holds per goroutine stay live.
// ns/op is one acquire plus one release.
func BenchmarkHold1Uncontended(b *testing.B) { benchUncontended(b, 1) }
func BenchmarkHold4Uncontended(b *testing.B) { benchUncontended(b, 4) }

// The contended benchmarks put every goroutine on the same seats: an op is
// one attempt, and a goroutine that wins releases at once, so the seats
// keep changing hands. grants/s counts the attempts that won.
func BenchmarkHold1Contended(b *testing.B) { benchContended(b, 1) }
func BenchmarkHold4Contended(b *testing.B) { benchContended(b, 4) }

const (
	benchTTL = 10 * time.Minute
	window   = 1024
	ring     = 4 * window
)

func benchUncontended(b *testing.B, perHold int) {
	h := NewHolds(nil)
	ctx := context.Background()
	var sections, owners atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		sec := "S" + strconv.FormatInt(sections.Add(1), 10)
		// ring seat sets, prebuilt so the benchmark measures the table
		// and not the building of seat ids.
		sets := make([][]string, ring)
		for i := range sets {
			for n := range perHold {
				sets[i] = append(sets[i], boxoffice.SeatID(sec, strconv.Itoa(i), n+1))
			}
		}
		held := make([]boxoffice.ID, ring)
		owner := owners.Add(1) << 32
		for i := 0; pb.Next(); i++ {
			slot := i % ring
			owner++
			if _, err := h.Acquire(ctx, boxoffice.HoldRequest{
				EventID: 1, SeatIDs: sets[slot], Owner: boxoffice.ID(owner), TTL: benchTTL,
			}); err != nil {
				b.Errorf("Acquire of free seats = %v", err)
				return
			}
			held[slot] = boxoffice.ID(owner)
			old := (i - window + ring) % ring
			if i >= window {
				if n, _ := h.Release(ctx, 1, sets[old], held[old]); n != perHold {
					b.Errorf("Release freed %d seats, want %d", n, perHold)
					return
				}
			}
		}
	})
	reportRate(b, float64(b.N), "holds/s")
}

func benchContended(b *testing.B, perHold int) {
	h := NewHolds(nil)
	ctx := context.Background()
	var seats []string
	for n := range perHold {
		seats = append(seats, boxoffice.SeatID("Floor", "A", n+1))
	}
	var owners, grants atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		owner := owners.Add(1) << 32
		won := int64(0)
		for pb.Next() {
			owner++
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{
				EventID: 1, SeatIDs: seats, Owner: boxoffice.ID(owner), TTL: benchTTL,
			})
			switch boxoffice.ErrorCode(err) {
			case "":
				won++
				if n, _ := h.Release(ctx, 1, seats, boxoffice.ID(owner)); n != perHold {
					b.Errorf("Release freed %d seats, want %d", n, perHold)
					return
				}
			case boxoffice.ESEATTAKEN:
			default:
				b.Errorf("Acquire = %v", err)
				return
			}
		}
		grants.Add(won)
	})
	reportRate(b, float64(b.N), "attempts/s")
	reportRate(b, float64(grants.Load()), "grants/s")
}

func reportRate(b *testing.B, n float64, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(n/s, unit)
	}
}
