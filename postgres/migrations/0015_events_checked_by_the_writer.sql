-- 0015_events_checked_by_the_writer: bookings and event_users lose their
-- foreign keys to events, as booking_seats lost its own in 0014.
--
-- Why: each key locks the event's row (FOR KEY SHARE) for every booking
-- and every (event, user) row inserted. Every concurrent reserve and drain
-- batch of an event locks that one row, so PostgreSQL makes a MultiXact of
-- the lockers and rewrites the row's xmax, page and WAL, batch after batch.
-- pg_stat_statements, 20,000 direct reserves (Reserve/Production/Random):
-- the bookings insert took 711-806 ms with the key, 446-469 ms without;
-- event_users 608-674 ms with, 343-380 ms without.
--
-- What checks instead: event_users rows are created only for an event that
-- exists (ensureEventUsersSQL joins events), and a booking is written only
-- in the transaction that has locked its (event, user) row, so for a known
-- event. Events lose rows only when a month's partitions are archived, and
-- then those of every table go together.
DO $$
DECLARE
    t text;
    fk record;
BEGIN
    FOREACH t IN ARRAY ARRAY['bookings', 'event_users'] LOOP
        FOR fk IN
            SELECT conname FROM pg_constraint
            WHERE conrelid = t::regclass AND contype = 'f' AND conparentid = 0
              AND confrelid = 'events'::regclass
        LOOP
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, fk.conname);
        END LOOP;
    END LOOP;
END $$;
