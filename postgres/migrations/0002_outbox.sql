-- 0002_outbox: the transactional outbox. It mirrors
-- sqlite/migrations/0002_outbox.sql column for column: the store writes a
-- booking event here in the same transaction as the change it reports; a
-- relay (package outbox) publishes the unpublished rows in seq order, marks
-- them, and purges them a day later.
--
-- seq comes from a sequence, so it is handed out at INSERT, not at COMMIT:
-- a row with a smaller seq may become visible after one with a larger seq.
-- The relay reads by published_at IS NULL, never from a high-water mark,
-- so such a row is published one round later, not skipped. One booking's
-- events are in seq order: each change commits before the next one starts.
-- payload is json, not jsonb: it keeps the bytes the store wrote, so both
-- stores publish the same bytes.

CREATE TABLE outbox (
    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     text        NOT NULL UNIQUE,  -- "<topic>:<booking id>"
    topic        text        NOT NULL,
    key          text        NOT NULL,         -- the booking id
    payload      json        NOT NULL,         -- see docs/events.md
    created_at   timestamptz NOT NULL,
    published_at timestamptz                   -- NULL until the relay publishes it
);

-- The relay reads only the unpublished rows, in seq order.
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL;
-- The purge reads only the published rows, oldest first.
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;
