-- 0009_idempotency_outcome: an idempotency record keeps the kind of
-- answer it recorded (boxoffice.Outcome: held, confirmed, cancelled,
-- listed, joined) instead of an HTTP status code: the use cases know no
-- HTTP. Records written before have '' (their body replays as before).
-- status loses NOT NULL so that a process of the previous release, still
-- running during a rolling upgrade, can go on writing it; a later
-- migration drops it.

ALTER TABLE idempotency_keys ADD COLUMN outcome text NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ALTER COLUMN status DROP NOT NULL;
