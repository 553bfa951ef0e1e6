// Package faulttest runs the production topology of boxoffice as separate
// processes (two API processes, two booking workers, a relay, Redis,
// kafka-fake and a PostgreSQL cluster of its own), drives a flash-sale
// workload over HTTP while it injects faults (kill -9 of each role, SIGSTOP
// past the hold TTL and the Kafka session timeout, Redis and PostgreSQL
// restarts), heals, and audits what the clients were told against the
// database, the seat map and the booking events on Kafka.
//
// Everything is in the test files; docs/reliability.md says how to run it
// and what each check means.
package faulttest
