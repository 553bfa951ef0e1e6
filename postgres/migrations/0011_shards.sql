-- 0011_shards: events spread over several PostgreSQL databases by
-- postgres.Sharded (sharded.go). Every database gets these tables; only
-- the directory (shard 0) fills shards, event_shards and shard_load.

-- Which shard of which deployment this database is. Absent: a database
-- of its own (postgres.Store alone). Written once, when the database joins.
CREATE TABLE shard_identity (
    only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    deployment text        NOT NULL,   -- the directory's random token
    shard      integer     NOT NULL CHECK (shard BETWEEN 0 AND 15),
    joined_at  timestamptz NOT NULL DEFAULT now()
);

-- The directory: the shards of the deployment, so that a process given
-- fewer databases than the deployment has refuses to start.
CREATE TABLE shards (
    shard     integer     PRIMARY KEY CHECK (shard BETWEEN 0 AND 15),
    joined_at timestamptz NOT NULL DEFAULT now()
);

-- The directory: where each event lives. A placement never moves; the
-- rows of an event's bookings, tickets, listings, waitlist entries and
-- queued requests carry the shard in their ids' node id (see sharded.go).
CREATE TABLE event_shards (
    event_id  bigint      PRIMARY KEY,
    shard     integer     NOT NULL REFERENCES shards,
    seats     integer     NOT NULL,
    hot       boolean     NOT NULL,
    show_day  date        NOT NULL,
    placed_at timestamptz NOT NULL DEFAULT now()
);

-- The directory: seats and hot events placed per shard and show day, what
-- the placement policy weighs (upcoming days only), kept as counters so
-- that a placement reads a few hundred rows, not every event.
CREATE TABLE shard_load (
    shard    integer NOT NULL REFERENCES shards,
    show_day date    NOT NULL,
    events   integer NOT NULL,
    seats    bigint  NOT NULL,
    hot      integer NOT NULL,
    PRIMARY KEY (shard, show_day)
);

-- A record that no row goes with (PutIdempotency) is written on every
-- shard, so that its key is taken wherever a later request would write;
-- the copies off its home shard are replicas, which the purge does not
-- count.
ALTER TABLE idempotency_keys ADD COLUMN replica boolean NOT NULL DEFAULT false;
