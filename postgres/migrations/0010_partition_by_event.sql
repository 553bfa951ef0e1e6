-- 0010_partition_by_event: the tables that grow with seats and bookings
-- are partitioned by event, so that one event's rows live together and a
-- month of past shows can be exported and dropped as a whole (archive.go).
--
-- The key is the event id. Event ids carry the show's day in their time
-- bits (sale.Catalog.CreateEvent, snowflake.OnDay), so a range of event
-- ids is a range of show days: a partition holds the events whose shows
-- start in one calendar month (UTC), plus everything of those events. Events created
-- before this migration have ids minted at creation time; they, and every
-- show before the first month after the migration, are in the partitions
-- suffixed "legacy", which the archive takes once all of their shows are
-- over.
--
-- Partitioned, by RANGE (event_id) (events by RANGE (id)), in the order a
-- partition is created (parents before the tables that reference them):
-- events, sections, seats, seat_holds, event_users, bookings,
-- booking_seats, tickets, payments, listings, payouts, waitlist_entries.
-- A primary key or unique index of a partitioned table must hold the
-- partition key, so bookings, tickets, listings and waitlist entries are
-- keyed by (event_id, id), and payments and payouts gain an event_id.
-- Lookups by id alone (GET /bookings/{id}, /tickets/{id}, ...) use a plain
-- index on id in each partition: one small probe per live partition; every
-- statement after that names the event. The database now backs the
-- uniqueness of those ids (and of ticket codes) per event only; across
-- events they are unique by construction (Snowflake ids, random codes).
--
-- Not partitioned: event_draws (one row an event), seat_returns (a
-- transient queue) and queue_outcomes (looked up by request id); the
-- archive exports and deletes their rows with the partition's.
--
-- This rewrites the event tables: on a big database, plan it as downtime.
-- Partitions are created by boxoffice_partition (below): CREATE TABLE, then
-- ATTACH, which locks the parents SHARE UPDATE EXCLUSIVE, and SHARE ROW
-- EXCLUSIVE where a foreign key is cloned: writes to every event wait for
-- the few milliseconds it takes on empty tables, reads do not. The store
-- calls it with a short lock_timeout (partition.go), once a month of shows.

-- The partitions that exist, one row per suffix: the event-id range
-- [lo, hi) (lo NULL: from the smallest id). The archive deletes the row
-- with the partition; a restore writes it again.
CREATE TABLE event_partitions (
    suffix      text        PRIMARY KEY,
    lo          bigint,
    hi          bigint      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The partitioned tables in creation order; the archive detaches them in
-- the reverse order.
CREATE FUNCTION boxoffice_partitioned_tables() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['events', 'sections', 'seats', 'seat_holds', 'event_users', 'bookings',
                 'booking_seats', 'tickets', 'payments', 'listings', 'payouts', 'waitlist_entries']
$$;

-- boxoffice_partition creates the partition <table>_<suffix> of every
-- partitioned table for event ids [p_lo, p_hi) (p_lo NULL: MINVALUE) and
-- records it, unless it exists. Concurrent callers are serialized by an
-- advisory lock; the second finds the work done.
CREATE FUNCTION boxoffice_partition(p_suffix text, p_lo bigint, p_hi bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t     text;
    part  text;
    bound text;
    pidx  text;
    cidx  text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('boxoffice.partition.' || current_schema(), 0));
    IF EXISTS (SELECT 1 FROM event_partitions WHERE suffix = p_suffix) THEN
        RETURN;
    END IF;
    bound := format('FROM (%s) TO (%s)', coalesce(p_lo::text, 'MINVALUE'), p_hi);
    FOREACH t IN ARRAY boxoffice_partitioned_tables() LOOP
        part := t || '_' || p_suffix;
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)%s',
                       part, t, CASE WHEN t = 'seat_holds' THEN ' WITH (fillfactor = 70)' ELSE '' END);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES %s', t, part, bound);
        -- The partition's indexes are named after their parent's, so that
        -- an error names tickets_one_valid_per_seat_<suffix>, not an
        -- invented name.
        FOR pidx, cidx IN
            SELECT pi.relname, ci.relname
            FROM pg_inherits h
            JOIN pg_class ci ON ci.oid = h.inhrelid
            JOIN pg_class pi ON pi.oid = h.inhparent
            JOIN pg_index x ON x.indexrelid = ci.oid
            WHERE x.indrelid = part::regclass
        LOOP
            IF cidx <> left(pidx || '_' || p_suffix, 63) THEN
                EXECUTE format('ALTER INDEX %I RENAME TO %I', cidx, left(pidx || '_' || p_suffix, 63));
            END IF;
        END LOOP;
    END LOOP;
    INSERT INTO event_partitions (suffix, lo, hi) VALUES (p_suffix, p_lo, p_hi);
END
$$;

-- boxoffice_event_id_at is the smallest event id whose show starts at ts
-- (the Snowflake layout: milliseconds since 2025-01-01 UTC above 22 bits).
CREATE FUNCTION boxoffice_event_id_at(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT ((extract(epoch FROM ts) * 1000)::bigint - 1735689600000) << 22
$$;

-- The old tables step aside, with their indexes, which share a namespace
-- with the new ones.
DO $$
DECLARE
    t text;
    i text;
BEGIN
    FOREACH t IN ARRAY boxoffice_partitioned_tables() LOOP
        FOR i IN SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = t LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', i, i || '_0009');
        END LOOP;
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_0009');
    END LOOP;
END
$$;
ALTER TABLE event_draws DROP CONSTRAINT event_draws_event_id_fkey;
ALTER TABLE seat_returns DROP CONSTRAINT seat_returns_event_id_fkey;
ALTER TABLE seat_returns DROP CONSTRAINT seat_returns_booking_id_fkey;

CREATE TABLE events (
    id                  bigint      NOT NULL,
    name                text        NOT NULL,
    venue               text        NOT NULL,
    starts_at           timestamptz NOT NULL,
    sale_opens_at       timestamptz NOT NULL,
    sale_mode           text        NOT NULL CHECK (sale_mode IN ('direct', 'queued')),
    ticket_limit        integer     NOT NULL,
    created_at          timestamptz NOT NULL,
    refundable          boolean     NOT NULL DEFAULT false,
    refund_cutoff_hours integer     NOT NULL DEFAULT 0,
    resale_disabled     boolean     NOT NULL DEFAULT false,
    resale_cap_percent  integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);

CREATE TABLE sections (
    event_id      bigint  NOT NULL REFERENCES events (id),
    position      integer NOT NULL,
    name          text    NOT NULL,
    price_tier    text    NOT NULL,
    price_cents   bigint  NOT NULL,
    row_count     integer NOT NULL,
    seats_per_row integer NOT NULL,
    features      jsonb,
    PRIMARY KEY (event_id, position),
    UNIQUE (event_id, name)
) PARTITION BY RANGE (event_id);

-- As before 0010: no foreign key to events (see 0001).
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
) PARTITION BY RANGE (event_id);

-- See 0006; fillfactor is set on each partition (boxoffice_partition).
CREATE TABLE seat_holds (
    event_id   bigint            NOT NULL,
    seat_id    text COLLATE "C"  NOT NULL,
    owner      bigint,
    fence      bigint            NOT NULL DEFAULT 0,
    expires_at timestamptz,
    PRIMARY KEY (event_id, seat_id),
    CHECK ((owner IS NULL) = (expires_at IS NULL))
) PARTITION BY RANGE (event_id);

CREATE TABLE event_users (
    event_id bigint NOT NULL REFERENCES events (id),
    user_id  text   NOT NULL,
    PRIMARY KEY (event_id, user_id)
) PARTITION BY RANGE (event_id);

CREATE TABLE bookings (
    id                bigint      NOT NULL,
    event_id          bigint      NOT NULL REFERENCES events (id),
    user_id           text        NOT NULL,
    status            text        NOT NULL CHECK (status IN ('pending', 'confirmed', 'released', 'expired', 'failed', 'cancelled')),
    fence             bigint      NOT NULL,
    amount_cents      bigint      NOT NULL,
    held_until        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    confirmation_code text        NOT NULL DEFAULT '',
    payment_auth_id   text        NOT NULL DEFAULT '',
    listing_id        bigint,
    waitlist_entry_id bigint,
    PRIMARY KEY (event_id, id)
) PARTITION BY RANGE (event_id);
CREATE INDEX bookings_id ON bookings (id);
CREATE INDEX bookings_event_user ON bookings (event_id, user_id);
CREATE INDEX bookings_pending_held_until ON bookings (held_until) WHERE status = 'pending';
CREATE INDEX bookings_pending_listing ON bookings (listing_id) WHERE status = 'pending' AND listing_id IS NOT NULL;

CREATE TABLE booking_seats (
    booking_id bigint  NOT NULL,
    position   integer NOT NULL,
    event_id   bigint  NOT NULL,
    seat_id    text    NOT NULL,
    PRIMARY KEY (event_id, booking_id, position),
    UNIQUE (event_id, booking_id, seat_id),
    FOREIGN KEY (event_id, booking_id) REFERENCES bookings (event_id, id),
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
) PARTITION BY RANGE (event_id);
CREATE INDEX booking_seats_seat ON booking_seats (event_id, seat_id);

CREATE TABLE tickets (
    id            bigint      NOT NULL,
    event_id      bigint      NOT NULL,
    booking_id    bigint      NOT NULL,
    seat_id       text        NOT NULL,
    user_id       text        NOT NULL,
    code          text        NOT NULL,
    status        text        NOT NULL CHECK (status IN ('valid', 'void')),
    issued_at     timestamptz NOT NULL,
    void_reason   text        NOT NULL DEFAULT '',
    checked_in_at timestamptz,
    PRIMARY KEY (event_id, id),
    FOREIGN KEY (event_id, booking_id) REFERENCES bookings (event_id, id),
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
) PARTITION BY RANGE (event_id);
CREATE INDEX tickets_id ON tickets (id);
-- Codes are random (122 bits); the index finds one at check-in.
CREATE INDEX tickets_code ON tickets (code);
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON tickets (event_id, seat_id) WHERE status = 'valid';
CREATE INDEX tickets_booking ON tickets (event_id, booking_id);
CREATE INDEX tickets_user ON tickets (user_id, event_id) WHERE status = 'valid';

CREATE TABLE payments (
    event_id     bigint      NOT NULL,
    booking_id   bigint      NOT NULL,
    auth_id      text        NOT NULL,
    amount_cents bigint      NOT NULL,
    status       text        NOT NULL CHECK (status IN ('authorized', 'captured', 'refund_pending', 'refunded')),
    created_at   timestamptz NOT NULL,
    captured_at  timestamptz,
    refunded_at  timestamptz,
    PRIMARY KEY (event_id, booking_id),
    FOREIGN KEY (event_id, booking_id) REFERENCES bookings (event_id, id)
) PARTITION BY RANGE (event_id);
CREATE INDEX payments_booking ON payments (booking_id);
CREATE INDEX payments_authorized_created_at ON payments (created_at) WHERE status = 'authorized';
CREATE INDEX payments_refund_pending ON payments (created_at) WHERE status = 'refund_pending';

CREATE TABLE listings (
    id               bigint      NOT NULL,
    event_id         bigint      NOT NULL REFERENCES events (id),
    ticket_id        bigint      NOT NULL,
    seat_id          text        NOT NULL,
    seller_id        text        NOT NULL,
    price_cents      bigint      NOT NULL CHECK (price_cents >= 0),
    status           text        NOT NULL CHECK (status IN ('active', 'sold', 'withdrawn', 'void')),
    buyer_booking_id bigint,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (event_id, id),
    FOREIGN KEY (event_id, ticket_id) REFERENCES tickets (event_id, id),
    FOREIGN KEY (event_id, buyer_booking_id) REFERENCES bookings (event_id, id)
) PARTITION BY RANGE (event_id);
CREATE INDEX listings_id ON listings (id);
CREATE UNIQUE INDEX listings_one_active_per_ticket ON listings (event_id, ticket_id) WHERE status = 'active';
CREATE INDEX listings_event_active ON listings (event_id, seat_id) WHERE status = 'active';
CREATE INDEX listings_seller ON listings (seller_id, id);

CREATE TABLE payouts (
    event_id     bigint      NOT NULL,
    listing_id   bigint      NOT NULL,
    seller_id    text        NOT NULL,
    amount_cents bigint      NOT NULL,
    status       text        NOT NULL CHECK (status IN ('pending')),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (event_id, listing_id),
    FOREIGN KEY (event_id, listing_id) REFERENCES listings (event_id, id)
) PARTITION BY RANGE (event_id);
CREATE INDEX payouts_seller ON payouts (seller_id, listing_id);

CREATE TABLE waitlist_entries (
    id         bigint      NOT NULL,
    event_id   bigint      NOT NULL REFERENCES events (id),
    user_id    text        NOT NULL,
    section    text        NOT NULL DEFAULT '',
    price_tier text        NOT NULL DEFAULT '',
    quantity   integer     NOT NULL CHECK (quantity > 0),
    status     text        NOT NULL CHECK (status IN ('waiting', 'offered', 'fulfilled', 'lapsed', 'left')),
    booking_id bigint,
    offers     integer     NOT NULL DEFAULT 0,
    joined_at  timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (event_id, id)
) PARTITION BY RANGE (event_id);
CREATE INDEX waitlist_entries_id ON waitlist_entries (id);
CREATE UNIQUE INDEX waitlist_one_live_per_user ON waitlist_entries (event_id, user_id) WHERE status IN ('waiting', 'offered');
CREATE INDEX waitlist_waiting ON waitlist_entries (event_id, id) WHERE status = 'waiting';
CREATE INDEX waitlist_user ON waitlist_entries (user_id, id);

-- Everything before the first month after this migration, old ids
-- included, in the legacy partitions; later months get theirs on demand.
SELECT boxoffice_partition('legacy', NULL, boxoffice_event_id_at((date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'));

INSERT INTO events SELECT id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at,
    refundable, refund_cutoff_hours, resale_disabled, resale_cap_percent FROM events_0009;
INSERT INTO sections SELECT event_id, position, name, price_tier, price_cents, row_count, seats_per_row, features FROM sections_0009;
INSERT INTO seats SELECT event_id, seat_id, section, row_label, number, price_tier, price_cents, position FROM seats_0009;
INSERT INTO seat_holds SELECT event_id, seat_id, owner, fence, expires_at FROM seat_holds_0009;
INSERT INTO event_users SELECT event_id, user_id FROM event_users_0009;
INSERT INTO bookings SELECT id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
    confirmation_code, payment_auth_id, listing_id, waitlist_entry_id FROM bookings_0009;
INSERT INTO booking_seats SELECT booking_id, position, event_id, seat_id FROM booking_seats_0009;
INSERT INTO tickets SELECT id, event_id, booking_id, seat_id, user_id, code, status, issued_at, void_reason, checked_in_at FROM tickets_0009;
INSERT INTO payments SELECT b.event_id, p.booking_id, p.auth_id, p.amount_cents, p.status, p.created_at, p.captured_at, p.refunded_at
    FROM payments_0009 p JOIN bookings_0009 b ON b.id = p.booking_id;
INSERT INTO listings SELECT id, event_id, ticket_id, seat_id, seller_id, price_cents, status, buyer_booking_id, created_at, updated_at FROM listings_0009;
INSERT INTO payouts SELECT l.event_id, p.listing_id, p.seller_id, p.amount_cents, p.status, p.created_at
    FROM payouts_0009 p JOIN listings_0009 l ON l.id = p.listing_id;
INSERT INTO waitlist_entries SELECT id, event_id, user_id, section, price_tier, quantity, status, booking_id, offers, joined_at, updated_at FROM waitlist_entries_0009;

DROP TABLE payouts_0009, listings_0009, payments_0009, tickets_0009, booking_seats_0009, bookings_0009,
    event_users_0009, seat_holds_0009, seats_0009, sections_0009, waitlist_entries_0009, events_0009;

ALTER TABLE event_draws ADD FOREIGN KEY (event_id) REFERENCES events (id);
ALTER TABLE seat_returns ADD FOREIGN KEY (event_id) REFERENCES events (id);
ALTER TABLE seat_returns ADD FOREIGN KEY (event_id, booking_id) REFERENCES bookings (event_id, id);
CREATE INDEX seat_returns_event ON seat_returns (event_id);
