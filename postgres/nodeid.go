package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// nodeLockBase namespaces the advisory locks that stand for Snowflake node
// ids, away from the migration lock.
const nodeLockBase = 0x626f780000 // "box" << 16

// LeaseNodeID takes the first free Snowflake node id in [0, maxID] and
// keeps it until release is called: the id is a session-level advisory lock
// on a connection of its own (not one of the pool's), so a process that
// dies loses its id with its connection, and no two live processes sharing
// the database ever hold the same one. EUNAVAILABLE if the server cannot be
// reached; ECONFLICT if every id is taken.
func (s *Store) LeaseNodeID(ctx context.Context, maxID int) (id int, release func(), err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return 0, nil, boxoffice.Unavailable("database", err)
	}
	for n := 0; n <= maxID; n++ {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(nodeLockBase+n)).Scan(&ok); err != nil {
			conn.Close(context.Background())
			return 0, nil, translate(err)
		}
		if ok {
			// Closing the session releases its advisory locks.
			return n, func() { conn.Close(context.Background()) }, nil
		}
	}
	conn.Close(context.Background())
	return 0, nil, boxoffice.Errorf(boxoffice.ECONFLICT, "all %d Snowflake node ids are taken", maxID+1)
}
