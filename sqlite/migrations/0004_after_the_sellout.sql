-- 0004_after_the_sellout: cancellation and refund, fan-to-fan resale,
-- check-in, the waitlist and the seat returns that feed it. The
-- PostgreSQL schema (postgres/migrations/0003_after_the_sellout.sql)
-- mirrors it. The runner applies it with foreign keys off and checks them
-- before committing (sqlite/migrate.go), so bookings and payments can be
-- rebuilt for their wider status lists, as SQLite's ALTER TABLE cannot
-- change a CHECK.

-- Events: the refund policy and the resale rules.
ALTER TABLE events ADD COLUMN refundable          INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN refund_cutoff_hours INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN resale_disabled     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN resale_cap_percent  INTEGER NOT NULL DEFAULT 0;

-- Bookings: 'cancelled', and the resale purchase or waitlist offer a
-- booking is.
CREATE TABLE bookings_new (
    id                INTEGER PRIMARY KEY,
    event_id          INTEGER NOT NULL REFERENCES events (id),
    user_id           TEXT    NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('pending', 'confirmed', 'released', 'expired', 'failed', 'cancelled')),
    fence             INTEGER NOT NULL,
    amount_cents      INTEGER NOT NULL,
    held_until        INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    confirmation_code TEXT    NOT NULL DEFAULT '',
    payment_auth_id   TEXT    NOT NULL DEFAULT '',
    listing_id        INTEGER,            -- a resale purchase: listings (id)
    waitlist_entry_id INTEGER             -- a waitlist offer: waitlist_entries (id)
) STRICT;
INSERT INTO bookings_new (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
                          confirmation_code, payment_auth_id)
    SELECT id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
           confirmation_code, payment_auth_id
    FROM bookings;
DROP TABLE bookings;
ALTER TABLE bookings_new RENAME TO bookings;
CREATE INDEX bookings_event_user ON bookings (event_id, user_id);
CREATE INDEX bookings_pending_held_until ON bookings (held_until) WHERE status = 'pending';
-- A listing's live buyer, found by the listing (withdraw, the database's
-- own check that one listing has one buyer at a time).
CREATE INDEX bookings_pending_listing ON bookings (listing_id) WHERE status = 'pending' AND listing_id IS NOT NULL;

-- Payments: a cancelled booking's refund is owed, then done.
CREATE TABLE payments_new (
    booking_id   INTEGER PRIMARY KEY REFERENCES bookings (id),
    auth_id      TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('authorized', 'captured', 'refund_pending', 'refunded')),
    created_at   INTEGER NOT NULL,
    captured_at  INTEGER,
    refunded_at  INTEGER
) STRICT;
INSERT INTO payments_new (booking_id, auth_id, amount_cents, status, created_at, captured_at)
    SELECT booking_id, auth_id, amount_cents, status, created_at, captured_at FROM payments;
DROP TABLE payments;
ALTER TABLE payments_new RENAME TO payments;
CREATE INDEX payments_authorized_created_at ON payments (created_at) WHERE status = 'authorized';
CREATE INDEX payments_refund_pending ON payments (created_at) WHERE status = 'refund_pending';

-- Tickets: why one is void, when it was admitted; a user's tickets.
ALTER TABLE tickets ADD COLUMN void_reason   TEXT    NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN checked_in_at INTEGER;
CREATE INDEX tickets_user ON tickets (user_id, event_id) WHERE status = 'valid';

-- Resale listings: at most one active listing per ticket.
CREATE TABLE listings (
    id               INTEGER PRIMARY KEY,
    event_id         INTEGER NOT NULL REFERENCES events (id),
    ticket_id        INTEGER NOT NULL REFERENCES tickets (id),
    seat_id          TEXT    NOT NULL,
    seller_id        TEXT    NOT NULL,
    price_cents      INTEGER NOT NULL CHECK (price_cents >= 0),
    status           TEXT    NOT NULL CHECK (status IN ('active', 'sold', 'withdrawn', 'void')),
    buyer_booking_id INTEGER REFERENCES bookings (id),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX listings_one_active_per_ticket ON listings (ticket_id) WHERE status = 'active';
CREATE INDEX listings_event_active ON listings (event_id, seat_id) WHERE status = 'active';
CREATE INDEX listings_seller ON listings (seller_id, id);

-- Payouts: what a seller is owed, one per sold listing.
CREATE TABLE payouts (
    listing_id   INTEGER PRIMARY KEY REFERENCES listings (id),
    seller_id    TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('pending')),
    created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX payouts_seller ON payouts (seller_id, listing_id);

-- The waitlist: one live entry per user and event, served in id order.
CREATE TABLE waitlist_entries (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER NOT NULL REFERENCES events (id),
    user_id         TEXT    NOT NULL,
    section         TEXT    NOT NULL DEFAULT '',
    price_tier      TEXT    NOT NULL DEFAULT '',
    quantity        INTEGER NOT NULL CHECK (quantity > 0),
    status          TEXT    NOT NULL CHECK (status IN ('waiting', 'offered', 'fulfilled', 'lapsed', 'left')),
    booking_id      INTEGER,              -- the current or last offer
    offers          INTEGER NOT NULL DEFAULT 0,
    joined_at       INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX waitlist_one_live_per_user ON waitlist_entries (event_id, user_id) WHERE status IN ('waiting', 'offered');
CREATE INDEX waitlist_waiting ON waitlist_entries (event_id, id) WHERE status = 'waiting';
CREATE INDEX waitlist_user ON waitlist_entries (user_id, id);

-- Seats that came back, written with the change that freed them, deleted
-- once offered to the waitlist or given back to the public.
CREATE TABLE seat_returns (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   INTEGER NOT NULL REFERENCES events (id),
    booking_id INTEGER NOT NULL REFERENCES bookings (id),
    seat_ids   TEXT    NOT NULL,          -- JSON array, in the booking's order
    listing_id INTEGER,                   -- a resale that fell through
    created_at INTEGER NOT NULL
) STRICT;
