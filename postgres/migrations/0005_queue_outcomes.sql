-- 0005_queue_outcomes: the durable record of the flash-sale queue's
-- outcomes. In production the queue's state (positions, live entries,
-- outcomes) is kept in Redis for speed; Redis may lose it (a restart
-- without persistence, a failover to a replica that lagged). The requests
-- themselves are in the Kafka log; their outcomes are here, written by the
-- booking workers before Redis hears of them, so the state can be rebuilt
-- from the two and GET /queue/{id} answers from here meanwhile.
--
-- One row per request, first outcome wins (a redelivered request that is
-- decided again keeps the first answer). Rows stay with their event (about
-- 100 bytes a request); archiving past events (partitioning by event) is
-- where they will go.

CREATE TABLE queue_outcomes (
    request_id  bigint      PRIMARY KEY,
    event_id    bigint      NOT NULL,
    user_id     text        NOT NULL,
    position    bigint      NOT NULL,
    status      text        NOT NULL CHECK (status IN ('held', 'rejected')),
    reason      text        NOT NULL DEFAULT '',
    message     text        NOT NULL DEFAULT '',
    booking_id  bigint,
    held_until  timestamptz,
    finished_at timestamptz NOT NULL
);

-- The rebuild counts each event's outcomes (its "served" counter).
CREATE INDEX queue_outcomes_event ON queue_outcomes (event_id);
