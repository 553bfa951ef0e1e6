-- 0006_queue_sold_out: the queue of an event that sold out answers every
-- request up to this position "sold out" at once (QueueState.MarkSoldOut);
-- 0 while it has not sold out.

ALTER TABLE queue_events ADD COLUMN sold_out_upto INTEGER NOT NULL DEFAULT 0;
