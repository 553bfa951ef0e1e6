-- 0012_tickets_user_predicate: tickets_user serves only the look-ups that
-- name a user. A probe for a seat's valid ticket (event, seat) could also
-- use it, as a full scan filtered by its second column: a prepared
-- statement whose generic plan was made while the event's partition was
-- empty (at the opening of a sale) chose it, and then read every valid
-- ticket of the month for each seat it asked about (the seat checks of a
-- batch of bookings or confirms, 300 index pages a seat by the end of a
-- 70,000-seat sale). "user_id IS NOT NULL" is implied by user_id = $1 and
-- by nothing a seat probe says, so the planner can no longer pick it there.
DROP INDEX tickets_user;
CREATE INDEX tickets_user ON tickets (user_id, event_id) WHERE status = 'valid' AND user_id IS NOT NULL;

-- The partitions' indexes named after their parent's, as
-- boxoffice_partition names them.
DO $$
DECLARE
    pidx text;
    cidx text;
    suffix text;
BEGIN
    FOR pidx, cidx, suffix IN
        SELECT pi.relname, ci.relname, substr(t.relname, length('tickets_') + 1)
        FROM pg_inherits h
        JOIN pg_class ci ON ci.oid = h.inhrelid
        JOIN pg_class pi ON pi.oid = h.inhparent
        JOIN pg_index x ON x.indexrelid = ci.oid
        JOIN pg_class t ON t.oid = x.indrelid
        WHERE pi.relname = 'tickets_user' AND pi.relnamespace = current_schema()::regnamespace
    LOOP
        IF cidx <> left(pidx || '_' || suffix, 63) THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', cidx, left(pidx || '_' || suffix, 63));
        END IF;
    END LOOP;
END
$$;
