-- 0006_seat_holds: the seat-hold port (boxoffice.Holds) and the lease port
-- (boxoffice.Leases) in PostgreSQL, for a deployment without Redis and for
-- the benchmark of a row-locking reserve (see holds.go). Every time is the
-- database's clock, so that any number of processes agree on expiry.

-- One row per (event, seat) that was ever asked for. A row is free when
-- owner is NULL (never held, or released) or expires_at has passed; it is
-- never deleted, so it keeps the last fence given on the seat and so that
-- an Acquire only inserts on a seat's first hold. seat_id is compared and
-- sorted bytewise (COLLATE "C"): every writer locks rows in (event_id,
-- seat_id) order, and that order must be the same for all of them.
-- owner, fence and expires_at are in no index, and fillfactor leaves room
-- on each page, so the updates of a hold are HOT updates.
CREATE TABLE seat_holds (
    event_id   bigint            NOT NULL,
    seat_id    text COLLATE "C"  NOT NULL,
    owner      bigint,                      -- NULL: free
    fence      bigint            NOT NULL DEFAULT 0,
    expires_at timestamptz,                 -- NULL with owner
    PRIMARY KEY (event_id, seat_id),
    CHECK ((owner IS NULL) = (expires_at IS NULL))
) WITH (fillfactor = 70);

-- The fences of every grant. nextval is taken while the grant holds the
-- row locks of its seats, and whoever holds a seat next can lock it only
-- after that grant commits, so its nextval is larger: a later hold on a seat
-- always has a larger fence. A sequence never blocks and is not rolled back
-- (a refused or failed request leaves a gap, which the port allows), so
-- unlike a counter row it serializes nothing.
CREATE SEQUENCE seat_hold_fences;

-- seat_holds_acquire decides a batch of hold requests in one transaction
-- (the caller's, or the implicit one of a single statement), in order, each
-- all or nothing, as if each were acquired in turn. Request i is for the
-- seats p_seats[p_first[i] .. p_first[i]+p_count[i]-1] (distinct) of event
-- p_event[i], by p_owner[i], superseding p_supersede[i] (0: none), for
-- p_ttl_ms[i] milliseconds; p_seat_events is p_seats' events, aligned with
-- p_seats. It returns one row per request, in order: the fence and expiry of
-- a grant, or the seats held by others.
--
-- Every seat of the batch is locked first, all at once and in (event_id,
-- seat_id) order, like every other writer of seat_holds: a batch never
-- deadlocks with another batch, an Acquire or a Release, whatever the order
-- of its requests and seats. Rows are inserted in that order too, so that
-- inserters waiting on each other's new rows cannot deadlock either.
CREATE FUNCTION seat_holds_acquire(
    p_event       bigint[],
    p_owner       bigint[],
    p_supersede   bigint[],
    p_ttl_ms      bigint[],
    p_first       integer[],
    p_count       integer[],
    p_seat_events bigint[],
    p_seats       text[])
RETURNS TABLE (granted_fence bigint, granted_until timestamptz, taken_seats text[])
LANGUAGE plpgsql AS $$
DECLARE
    t       timestamptz;
    v_seats text[];
    n_rows  integer;
BEGIN
    INSERT INTO seat_holds (event_id, seat_id)
    SELECT DISTINCT u.e, u.s COLLATE "C"
    FROM unnest(p_seat_events, p_seats) AS u(e, s)
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;

    PERFORM 1
    FROM seat_holds h
    WHERE (h.event_id, h.seat_id) IN (SELECT u.e, u.s FROM unnest(p_seat_events, p_seats) AS u(e, s))
    ORDER BY h.event_id, h.seat_id
    FOR UPDATE OF h;

    -- After the locks: a hold that ran out while this waited is free.
    t := clock_timestamp();

    FOR i IN 1 .. coalesce(cardinality(p_owner), 0) LOOP
        v_seats := p_seats[p_first[i] : p_first[i] + p_count[i] - 1];

        SELECT array_agg(h.seat_id) INTO taken_seats
        FROM seat_holds h
        WHERE h.event_id = p_event[i] AND h.seat_id = ANY (v_seats)
          AND h.owner IS NOT NULL AND h.expires_at > t
          AND h.owner <> p_owner[i]
          AND h.owner IS DISTINCT FROM nullif(p_supersede[i], 0);
        IF taken_seats IS NOT NULL THEN
            granted_fence := NULL;
            granted_until := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        granted_fence := nextval('seat_hold_fences');
        granted_until := t + p_ttl_ms[i] * interval '1 millisecond';
        UPDATE seat_holds h
        SET owner = p_owner[i], fence = granted_fence, expires_at = granted_until
        WHERE h.event_id = p_event[i] AND h.seat_id = ANY (v_seats);
        GET DIAGNOSTICS n_rows = ROW_COUNT;
        IF n_rows <> p_count[i] THEN
            -- Cannot happen while rows are never deleted; if it does, the
            -- whole batch is rolled back and run again.
            RAISE EXCEPTION 'seat_holds_acquire: % of % seats found', n_rows, p_count[i]
                USING ERRCODE = 'serialization_failure';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Short exclusive leases by key (an idempotency key in flight). A lease is
-- live while expires_at is in the future; token is a random value per
-- taking, so only the holder that took it ends it. A released lease is
-- deleted; one whose holder died stays until its key is taken again.
CREATE TABLE key_leases (
    key        text        PRIMARY KEY,
    token      text        NOT NULL,
    expires_at timestamptz NOT NULL
);
