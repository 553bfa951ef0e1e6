-- 0009_idempotency_outcome: an idempotency record keeps the kind of
-- answer it recorded (boxoffice.Outcome: held, confirmed, cancelled,
-- listed, joined) instead of an HTTP status code: the use cases know no
-- HTTP. Records written before have '' (their body replays as before).
-- One process owns the embedded file, so the old column goes at once.

ALTER TABLE idempotency_keys ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys DROP COLUMN status;
