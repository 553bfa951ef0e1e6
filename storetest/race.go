//go:build race

package storetest

// raceEnabled is true under the race detector, which makes a pure-Go
// transpiled SQLite some 40 times slower; single-goroutine bulk tests skip.
const raceEnabled = true
