package sale

import (
	"sync"
	"time"
)

// readThrough returns a kept value younger than fresh, or reads it afresh
// with read, one caller at a time (under reading). While one caller reads,
// the others answer with a value younger than stale rather than wait for
// that read's round trip; past stale they wait, and take what it read if
// it is fresh by then. younger reports the kept value if it is younger
// than the age given; read keeps what it reads.
func readThrough[T any](reading *sync.Mutex, younger func(age time.Duration) (T, bool), fresh, stale time.Duration, read func() (T, error)) (T, error) {
	if v, ok := younger(fresh); ok {
		return v, nil
	}
	if !reading.TryLock() {
		if v, ok := younger(stale); ok {
			return v, nil
		}
		reading.Lock()
	}
	defer reading.Unlock()
	if v, ok := younger(fresh); ok {
		return v, nil // read while this caller waited
	}
	return read()
}
