-- 0012_queue_live_by_user: a user's live entries are counted through the
-- (user_id, idempotency_key) index every request already writes, not an
-- index of their own. user_id is random, so each entry of
-- queue_requests_live dirtied a page of its own on the writer twice: at
-- the admission, and at the outcome that took it out of the partial index.
-- A user has a handful of requests, which the key index finds together.
DROP INDEX queue_requests_live;
