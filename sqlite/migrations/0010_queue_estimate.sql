-- 0010_queue_estimate: a queued request keeps the wait its 202 told
-- (seconds; NULL in the pre-queue), so the worker that decides it can
-- measure the estimate against the real wait.

ALTER TABLE queue_requests ADD COLUMN estimated_wait REAL;
