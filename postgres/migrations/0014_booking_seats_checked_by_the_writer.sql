-- 0014_booking_seats_checked_by_the_writer: booking_seats loses its two
-- foreign keys (to seats and to bookings), the reserve's and the drain's
-- hottest insert.
--
-- Why: PostgreSQL checks a foreign key by locking the row it names (FOR
-- KEY SHARE), and such a lock is a write: the seat's and the booking's
-- tuples get a new xmax, their pages are dirtied and WAL-logged, for every
-- seat of every booking. With them, inserting a booking's seats cost more
-- than the booking itself (pg_stat_statements, 60,000 reserves: 38 us per
-- seat row, 13 us without), and bookings were written 11-32 % slower
-- (docs/benchmarks.md).
--
-- What checks instead, in the same transaction as the insert: every
-- seat is looked up in seats first and an unknown one refused (EINVALID;
-- the batch's seat facts, CreateBooking's unknown-seat query), and the
-- booking row is inserted by the same statements batch just before its
-- seats. Neither seats nor bookings lose rows, except when a month's
-- partitions are archived, and then those of every table go together.
-- Double selling is still the database's to refuse: the unique indexes on
-- booking_seats, tickets and seat_holds are untouched. tickets keeps its
-- foreign keys (a confirm writes far fewer rows).
DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'booking_seats'::regclass AND contype = 'f' AND conparentid = 0
    LOOP
        EXECUTE format('ALTER TABLE booking_seats DROP CONSTRAINT %I', fk.conname);
    END LOOP;
END $$;
