-- 0003_queue: the flash-sale queue of the embedded default. The table is
-- both the front door's book (idempotency, one live entry per user,
-- positions, outcomes) and the durable log the workers drain, in log_seq
-- order: a request admitted here survives kill -9.

CREATE TABLE queue_requests (
    id              INTEGER PRIMARY KEY,      -- the request id, also its booking's id
    event_id        INTEGER NOT NULL REFERENCES events (id),
    user_id         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    request_hash    TEXT    NOT NULL,
    seat_ids        TEXT    NOT NULL,         -- JSON array
    position        INTEGER NOT NULL,         -- 0 while in the pre-queue
    prequeued       INTEGER NOT NULL DEFAULT 0, -- came through the pre-queue
    log_seq         INTEGER,                  -- order of the log; NULL while in the pre-queue
    status          TEXT    NOT NULL CHECK (status IN ('waiting', 'queued', 'held', 'rejected')),
    reason          TEXT    NOT NULL DEFAULT '',
    message         TEXT    NOT NULL DEFAULT '',
    booking_id      INTEGER,
    held_until      INTEGER,
    enqueued_at     INTEGER NOT NULL,
    finished_at     INTEGER,
    UNIQUE (user_id, idempotency_key)
) STRICT;

CREATE UNIQUE INDEX queue_requests_position ON queue_requests (event_id, position) WHERE position > 0;
-- Not partial, so that max(log_seq) is one index look-up (NULLs are allowed
-- twice in a UNIQUE index).
CREATE UNIQUE INDEX queue_requests_log ON queue_requests (log_seq);
CREATE INDEX queue_requests_todo ON queue_requests (log_seq) WHERE status = 'queued';
CREATE INDEX queue_requests_live ON queue_requests (event_id, user_id) WHERE status IN ('waiting', 'queued');
CREATE INDEX queue_requests_waiting ON queue_requests (event_id, id) WHERE status = 'waiting';

CREATE TABLE queue_events (
    event_id INTEGER PRIMARY KEY REFERENCES events (id),
    admitted INTEGER NOT NULL DEFAULT 0,  -- highest position given
    served   INTEGER NOT NULL DEFAULT 0,  -- requests with an outcome
    waiting  INTEGER NOT NULL DEFAULT 0,  -- in the pre-queue
    opened   INTEGER NOT NULL DEFAULT 0   -- the pre-queue has its positions
) STRICT;
