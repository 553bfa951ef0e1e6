// Package boxoffice is the domain core of the boxoffice ticketing backend:
// events and their seat layouts, holds, bookings, tickets, the error
// vocabulary, and the small interfaces (ports) that the adapters implement.
//
// It imports no driver. The adapters live in one package per outside
// dependency (sqlite, postgres, inmem, redis, httpapi, ...) and are wired
// together only in cmd/boxoffice.
//
// The invariants the whole system keeps are listed in docs/architecture.md;
// the ones this package states in types are:
//   - a hold covers all the seats of one booking or none of them;
//   - a hold belongs to one booking (its Owner) and carries a fencing token
//     (Fence) that grows with every hold taken on the event;
//   - a seat has at most one valid ticket, which the Store enforces with a
//     unique constraint whatever the hold layer says.
package boxoffice
