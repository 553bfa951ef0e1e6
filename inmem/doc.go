// Package inmem holds the in-process implementations of boxoffice's ports
// for the embedded, one-binary deployment: the seat-hold table (Holds),
// the in-flight leases (Leases), the queue's notices (Notifier) and a
// seat-map snapshot store (Snapshots, a seatmap.Shared for one process).
// They keep the semantics of the Redis implementations and pass the same
// contract suites (holdtest, notifytest, seatmap/sharedtest).
package inmem
