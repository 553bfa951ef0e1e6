-- 0001_init: events and their layouts, bookings, tickets, payments and
-- idempotency records. It mirrors sqlite/migrations/0001_init.sql table for
-- table and column for column; the differences are PostgreSQL's types
-- (timestamptz, written in UTC at millisecond precision; bigint ids and
-- cents; bytea), one table SQLite does not need (event_users) and one
-- foreign key left out (seats.event_id, see below).

CREATE TABLE events (
    id            bigint      PRIMARY KEY,
    name          text        NOT NULL,
    venue         text        NOT NULL,
    starts_at     timestamptz NOT NULL,
    sale_opens_at timestamptz NOT NULL,
    sale_mode     text        NOT NULL CHECK (sale_mode IN ('direct', 'queued')),
    ticket_limit  integer     NOT NULL,
    created_at    timestamptz NOT NULL
);

CREATE TABLE sections (
    event_id      bigint  NOT NULL REFERENCES events (id),
    position      integer NOT NULL,
    name          text    NOT NULL,
    price_tier    text    NOT NULL,
    price_cents   bigint  NOT NULL,
    row_count     integer NOT NULL,
    seats_per_row integer NOT NULL,
    PRIMARY KEY (event_id, position),
    UNIQUE (event_id, name)
);

-- One row per seat of the layout, so that bookings and tickets can only
-- name seats that exist (the foreign keys below). Written by COPY, in the
-- transaction that writes the event, and never deleted. Unlike SQLite's,
-- event_id has no foreign key to events: its per-row check is half the
-- cost of a 200,000-seat CreateEvent (~0.9 s of ~1.7 s here), and the
-- only writer inserts the event first.
CREATE TABLE seats (
    event_id    bigint  NOT NULL,
    seat_id     text    NOT NULL,
    section     text    NOT NULL,
    row_label   text    NOT NULL,
    number      integer NOT NULL,
    price_tier  text    NOT NULL,
    price_cents bigint  NOT NULL,
    position    integer NOT NULL,
    PRIMARY KEY (event_id, seat_id)
);

CREATE TABLE bookings (
    id                bigint      PRIMARY KEY,
    event_id          bigint      NOT NULL REFERENCES events (id),
    user_id           text        NOT NULL,
    status            text        NOT NULL CHECK (status IN ('pending', 'confirmed', 'released', 'expired', 'failed')),
    fence             bigint      NOT NULL,
    amount_cents      bigint      NOT NULL,
    held_until        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    confirmation_code text        NOT NULL DEFAULT '',
    payment_auth_id   text        NOT NULL DEFAULT ''
);

-- The per-user ticket limit counts a user's bookings for one event.
CREATE INDEX bookings_event_user ON bookings (event_id, user_id);
-- The expiry sweep reads only pending bookings, oldest hold first.
CREATE INDEX bookings_pending_held_until ON bookings (held_until) WHERE status = 'pending';

-- One row per (event, user) that ever booked. CreateBooking locks it
-- (SELECT ... FOR UPDATE) before counting the user's seats, so that one
-- user's parallel requests, from any number of processes, are counted one
-- after the other and cannot slip past the ticket limit together. (SQLite
-- needs no such row: it has one writer at a time.)
CREATE TABLE event_users (
    event_id bigint NOT NULL REFERENCES events (id),
    user_id  text   NOT NULL,
    PRIMARY KEY (event_id, user_id)
);

CREATE TABLE booking_seats (
    booking_id bigint  NOT NULL REFERENCES bookings (id),
    position   integer NOT NULL,
    event_id   bigint  NOT NULL,
    seat_id    text    NOT NULL,
    PRIMARY KEY (booking_id, position),
    UNIQUE (booking_id, seat_id),
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
);

-- The fencing check at confirm looks up the other bookings of a seat.
CREATE INDEX booking_seats_seat ON booking_seats (event_id, seat_id);

CREATE TABLE tickets (
    id         bigint      PRIMARY KEY,
    event_id   bigint      NOT NULL,
    booking_id bigint      NOT NULL REFERENCES bookings (id),
    seat_id    text        NOT NULL,
    user_id    text        NOT NULL,
    code       text        NOT NULL UNIQUE,
    status     text        NOT NULL CHECK (status IN ('valid', 'void')),
    issued_at  timestamptz NOT NULL,
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
);

-- The final arbiter of "never sell a seat twice": at most one valid ticket
-- per seat, whatever the lock layer said. It also serves SoldSeats.
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON tickets (event_id, seat_id) WHERE status = 'valid';
CREATE INDEX tickets_booking ON tickets (booking_id);

CREATE TABLE payments (
    booking_id   bigint      PRIMARY KEY REFERENCES bookings (id),
    auth_id      text        NOT NULL,
    amount_cents bigint      NOT NULL,
    status       text        NOT NULL CHECK (status IN ('authorized', 'captured')),
    created_at   timestamptz NOT NULL,
    captured_at  timestamptz
);

-- The capture sweep reads only payments still authorized.
CREATE INDEX payments_authorized_created_at ON payments (created_at) WHERE status = 'authorized';

CREATE TABLE idempotency_keys (
    user_id      text        NOT NULL,
    key          text        NOT NULL,
    request_hash text        NOT NULL,
    status       integer     NOT NULL,
    body         bytea,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
