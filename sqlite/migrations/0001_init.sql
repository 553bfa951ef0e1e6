-- 0001_init: events and their layouts, bookings, tickets, payments and
-- idempotency records. Times are INTEGER unix milliseconds, UTC. Money is
-- INTEGER cents. The PostgreSQL schema (postgres/migrations) mirrors this
-- one table for table and column for column.

CREATE TABLE events (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    venue         TEXT    NOT NULL,
    starts_at     INTEGER NOT NULL,
    sale_opens_at INTEGER NOT NULL,
    sale_mode     TEXT    NOT NULL CHECK (sale_mode IN ('direct', 'queued')),
    ticket_limit  INTEGER NOT NULL,
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE sections (
    event_id      INTEGER NOT NULL REFERENCES events (id),
    position      INTEGER NOT NULL,
    name          TEXT    NOT NULL,
    price_tier    TEXT    NOT NULL,
    price_cents   INTEGER NOT NULL,
    row_count     INTEGER NOT NULL,
    seats_per_row INTEGER NOT NULL,
    PRIMARY KEY (event_id, position),
    UNIQUE (event_id, name)
) STRICT, WITHOUT ROWID;

-- One row per seat of the layout, so that bookings and tickets can only
-- name seats that exist (the foreign keys below).
CREATE TABLE seats (
    event_id    INTEGER NOT NULL REFERENCES events (id),
    seat_id     TEXT    NOT NULL,
    section     TEXT    NOT NULL,
    row_label   TEXT    NOT NULL,
    number      INTEGER NOT NULL,
    price_tier  TEXT    NOT NULL,
    price_cents INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (event_id, seat_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE bookings (
    id                INTEGER PRIMARY KEY,
    event_id          INTEGER NOT NULL REFERENCES events (id),
    user_id           TEXT    NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('pending', 'confirmed', 'released', 'expired', 'failed')),
    fence             INTEGER NOT NULL,
    amount_cents      INTEGER NOT NULL,
    held_until        INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    confirmation_code TEXT    NOT NULL DEFAULT '',
    payment_auth_id   TEXT    NOT NULL DEFAULT ''
) STRICT;

-- The per-user ticket limit counts a user's bookings for one event.
CREATE INDEX bookings_event_user ON bookings (event_id, user_id);
-- The expiry sweep reads only pending bookings, oldest hold first.
CREATE INDEX bookings_pending_held_until ON bookings (held_until) WHERE status = 'pending';

CREATE TABLE booking_seats (
    booking_id INTEGER NOT NULL REFERENCES bookings (id),
    position   INTEGER NOT NULL,
    event_id   INTEGER NOT NULL,
    seat_id    TEXT    NOT NULL,
    PRIMARY KEY (booking_id, position),
    UNIQUE (booking_id, seat_id),
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
) STRICT, WITHOUT ROWID;

-- The fencing check at confirm looks up the other bookings of a seat.
CREATE INDEX booking_seats_seat ON booking_seats (event_id, seat_id);

CREATE TABLE tickets (
    id         INTEGER PRIMARY KEY,
    event_id   INTEGER NOT NULL,
    booking_id INTEGER NOT NULL REFERENCES bookings (id),
    seat_id    TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    code       TEXT    NOT NULL UNIQUE,
    status     TEXT    NOT NULL CHECK (status IN ('valid', 'void')),
    issued_at  INTEGER NOT NULL,
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
) STRICT;

-- The final arbiter of "never sell a seat twice": at most one valid ticket
-- per seat, whatever the lock layer said. It also serves SoldSeats.
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON tickets (event_id, seat_id) WHERE status = 'valid';
CREATE INDEX tickets_booking ON tickets (booking_id);

CREATE TABLE payments (
    booking_id   INTEGER PRIMARY KEY REFERENCES bookings (id),
    auth_id      TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('authorized', 'captured')),
    created_at   INTEGER NOT NULL,
    captured_at  INTEGER
) STRICT;

-- The capture sweep reads only payments still authorized.
CREATE INDEX payments_authorized_created_at ON payments (created_at) WHERE status = 'authorized';

CREATE TABLE idempotency_keys (
    user_id      TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
