-- 0007_draws: the verifiable draw of a queued sale's pre-queue (draw.go).
-- It mirrors sqlite/migrations/0007_draws.sql column for column.
--
-- A queued event gets its row when it is created: the secret seed, whose
-- SHA-256 is published from then on. The draw fills in the rest, once:
-- when, the position of the first request drawn, and the request ids in
-- drawn order. An event created before this migration, or one that never
-- had a pre-queue, has no row until a draw records one (its seed committed
-- at the draw).
--
-- request_ids is the order as one bytea of big-endian 64-bit ids, 8 bytes
-- an id: a big sale's pre-queue is a million requests, 8 MB in one row
-- (out of line, TOASTed) rather than a million rows. An empty bytea is a
-- draw nobody waited for.

CREATE TABLE event_draws (
    event_id       bigint      PRIMARY KEY REFERENCES events (id),
    seed           bytea       NOT NULL,
    committed_at   timestamptz NOT NULL,
    drawn_at       timestamptz,  -- NULL until the draw
    first_position bigint,       -- of request_ids' first id; NULL until the draw
    request_ids    bytea,        -- NULL until the draw
    CHECK ((drawn_at IS NULL) = (first_position IS NULL) AND (drawn_at IS NULL) = (request_ids IS NULL)),
    CHECK (length(request_ids) % 8 = 0)
);
