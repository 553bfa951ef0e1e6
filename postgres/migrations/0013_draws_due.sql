-- 0013_draws_due: the opener finds the draws it owes through an index of
-- the draws not yet released, by the sale's opening (Store.DrawsDue), instead of
-- reading a page of events: with thousands of events, one opening next
-- was not always on the page (the newest 200 by id, which is by show
-- day). Events never change, so the opening is copied here. It mirrors
-- sqlite/migrations/0011_draws_due.sql.
--
-- A queued event whose sale has not opened yet and that has no row (made
-- before 0007) is committed to a seed now, so that it is opened too: 32
-- bytes from two random (version 4) UUIDs, 244 random bits, from the
-- server's strong random source (gen_random_uuid, no extension needed).

ALTER TABLE event_draws ADD COLUMN sale_opens_at timestamptz;
-- The drawn requests are in the log (Store.MarkDrawReleased): the draw is
-- done. Until then, drawn or not, it is due, so that an opener that died
-- between the draw and the release is finished by the next.
ALTER TABLE event_draws ADD COLUMN released boolean NOT NULL DEFAULT false;
UPDATE event_draws SET released = true WHERE drawn_at IS NOT NULL;

UPDATE event_draws d SET sale_opens_at = e.sale_opens_at
FROM events e WHERE e.id = d.event_id;

INSERT INTO event_draws (event_id, seed, committed_at, sale_opens_at)
SELECT e.id, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), now(), e.sale_opens_at
FROM events e
WHERE e.sale_mode = 'queued' AND e.sale_opens_at > now()
  AND NOT EXISTS (SELECT 1 FROM event_draws d WHERE d.event_id = e.id);

ALTER TABLE event_draws ALTER COLUMN sale_opens_at SET NOT NULL;

CREATE INDEX event_draws_due ON event_draws (sale_opens_at, event_id) WHERE NOT released;
