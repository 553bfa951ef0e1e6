-- 0003_after_the_sellout: cancellation and refund, fan-to-fan resale,
-- check-in, the waitlist and the seat returns that feed it. It mirrors
-- sqlite/migrations/0004_after_the_sellout.sql table for table and column
-- for column.

-- Events: the refund policy and the resale rules.
ALTER TABLE events
    ADD COLUMN refundable          boolean NOT NULL DEFAULT false,
    ADD COLUMN refund_cutoff_hours integer NOT NULL DEFAULT 0,
    ADD COLUMN resale_disabled     boolean NOT NULL DEFAULT false,
    ADD COLUMN resale_cap_percent  integer NOT NULL DEFAULT 0;

-- Bookings: 'cancelled', and the resale purchase or waitlist offer a
-- booking is.
ALTER TABLE bookings DROP CONSTRAINT bookings_status_check;
ALTER TABLE bookings
    ADD CONSTRAINT bookings_status_check
        CHECK (status IN ('pending', 'confirmed', 'released', 'expired', 'failed', 'cancelled')),
    ADD COLUMN listing_id        bigint,  -- a resale purchase: listings (id)
    ADD COLUMN waitlist_entry_id bigint;  -- a waitlist offer: waitlist_entries (id)
-- A listing's live buyer, found by the listing (withdraw, the database's
-- own check that one listing has one buyer at a time).
CREATE INDEX bookings_pending_listing ON bookings (listing_id) WHERE status = 'pending' AND listing_id IS NOT NULL;

-- Payments: a cancelled booking's refund is owed, then done.
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments
    ADD CONSTRAINT payments_status_check CHECK (status IN ('authorized', 'captured', 'refund_pending', 'refunded')),
    ADD COLUMN refunded_at timestamptz;
CREATE INDEX payments_refund_pending ON payments (created_at) WHERE status = 'refund_pending';

-- Tickets: why one is void, when it was admitted; a user's tickets.
ALTER TABLE tickets
    ADD COLUMN void_reason   text NOT NULL DEFAULT '',
    ADD COLUMN checked_in_at timestamptz;
CREATE INDEX tickets_user ON tickets (user_id, event_id) WHERE status = 'valid';

-- Resale listings: at most one active listing per ticket.
CREATE TABLE listings (
    id               bigint      PRIMARY KEY,
    event_id         bigint      NOT NULL REFERENCES events (id),
    ticket_id        bigint      NOT NULL REFERENCES tickets (id),
    seat_id          text        NOT NULL,
    seller_id        text        NOT NULL,
    price_cents      bigint      NOT NULL CHECK (price_cents >= 0),
    status           text        NOT NULL CHECK (status IN ('active', 'sold', 'withdrawn', 'void')),
    buyer_booking_id bigint      REFERENCES bookings (id),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX listings_one_active_per_ticket ON listings (ticket_id) WHERE status = 'active';
CREATE INDEX listings_event_active ON listings (event_id, seat_id) WHERE status = 'active';
CREATE INDEX listings_seller ON listings (seller_id, id);

-- Payouts: what a seller is owed, one per sold listing.
CREATE TABLE payouts (
    listing_id   bigint      PRIMARY KEY REFERENCES listings (id),
    seller_id    text        NOT NULL,
    amount_cents bigint      NOT NULL,
    status       text        NOT NULL CHECK (status IN ('pending')),
    created_at   timestamptz NOT NULL
);
CREATE INDEX payouts_seller ON payouts (seller_id, listing_id);

-- The waitlist: one live entry per user and event, served in id order.
CREATE TABLE waitlist_entries (
    id         bigint      PRIMARY KEY,
    event_id   bigint      NOT NULL REFERENCES events (id),
    user_id    text        NOT NULL,
    section    text        NOT NULL DEFAULT '',
    price_tier text        NOT NULL DEFAULT '',
    quantity   integer     NOT NULL CHECK (quantity > 0),
    status     text        NOT NULL CHECK (status IN ('waiting', 'offered', 'fulfilled', 'lapsed', 'left')),
    booking_id bigint,                   -- the current or last offer
    offers     integer     NOT NULL DEFAULT 0,
    joined_at  timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX waitlist_one_live_per_user ON waitlist_entries (event_id, user_id) WHERE status IN ('waiting', 'offered');
CREATE INDEX waitlist_waiting ON waitlist_entries (event_id, id) WHERE status = 'waiting';
CREATE INDEX waitlist_user ON waitlist_entries (user_id, id);

-- Seats that came back, written with the change that freed them, deleted
-- once offered to the waitlist or given back to the public.
CREATE TABLE seat_returns (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id   bigint      NOT NULL REFERENCES events (id),
    booking_id bigint      NOT NULL REFERENCES bookings (id),
    seat_ids   text[]      NOT NULL,     -- in the booking's order
    listing_id bigint,                   -- a resale that fell through
    created_at timestamptz NOT NULL
);
