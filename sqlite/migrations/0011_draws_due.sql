-- 0011_draws_due: the opener finds the draws it owes through an index of
-- the draws not yet released, by the sale's opening (Store.DrawsDue), instead of
-- reading a page of events: with thousands of events, one opening next
-- was not always on the page. Events never change, so the opening is
-- copied here. The PostgreSQL schema (postgres/migrations/0013) mirrors it.
--
-- A queued event whose sale has not opened yet and that has no row (made
-- before 0007) is committed to a seed now, so that it is opened too.

ALTER TABLE event_draws ADD COLUMN sale_opens_at INTEGER NOT NULL DEFAULT 0;
-- The drawn requests are in the log (Store.MarkDrawReleased): the draw is
-- done. Until then, drawn or not, it is due, so that an opener that died
-- between the draw and the release is finished by the next.
ALTER TABLE event_draws ADD COLUMN released INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1));
UPDATE event_draws SET released = 1 WHERE drawn_at IS NOT NULL;

UPDATE event_draws
SET sale_opens_at = (SELECT e.sale_opens_at FROM events e WHERE e.id = event_draws.event_id);

INSERT INTO event_draws (event_id, seed, committed_at, sale_opens_at)
SELECT e.id, randomblob(32), CAST(unixepoch('subsec') * 1000 AS INTEGER), e.sale_opens_at
FROM events e
WHERE e.sale_mode = 'queued'
  AND e.sale_opens_at > CAST(unixepoch('subsec') * 1000 AS INTEGER)
  AND NOT EXISTS (SELECT 1 FROM event_draws d WHERE d.event_id = e.id);

CREATE INDEX event_draws_due ON event_draws (sale_opens_at, event_id) WHERE released = 0;
