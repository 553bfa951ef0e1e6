-- 0005_queue_best_available: a queued request may ask for the best seats
-- side by side instead of named ones (boxoffice.BestAvailable, as JSON);
-- the worker picks them when it serves the request. NULL for named seats.

ALTER TABLE queue_requests ADD COLUMN best TEXT;
