-- 0002_outbox: the transactional outbox. The store writes a booking event
-- here in the same transaction as the change it reports; a relay
-- (package outbox) publishes the unpublished rows in seq order, marks them,
-- and purges them a day later. Times are INTEGER unix milliseconds, UTC, as
-- in 0001. The PostgreSQL schema (postgres/migrations) mirrors this table.

CREATE TABLE outbox (
    -- AUTOINCREMENT: a seq is never handed out twice, even once the rows
    -- with the largest seqs have been purged.
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT    NOT NULL UNIQUE,  -- "<topic>:<booking id>"
    topic        TEXT    NOT NULL,
    key          TEXT    NOT NULL,         -- the booking id
    payload      TEXT    NOT NULL,         -- JSON, see docs/events.md
    created_at   INTEGER NOT NULL,
    published_at INTEGER                   -- NULL until the relay publishes it
) STRICT;

-- The relay reads only the unpublished rows, in seq order.
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL;
-- The purge reads only the published rows, oldest first.
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;
