// Package inmem holds the in-process implementations of boxoffice's ports
// for the embedded, one-binary deployment: the seat-hold table (Holds) and
// the in-flight leases (Leases). They keep the semantics of the Redis
// implementations and pass the same contract suite (holdtest).
package inmem
