-- 0013: the draw at a sale's opening gives the pre-queue its positions in
-- chunks, a write transaction each, so that the burst at the opening and
-- every other write go between them (one UPDATE of 60,000 requests held
-- the writer 1.1 s). While an event's pool is being drawn its row keeps
-- what the draw reserved: the positions after draw_base, and the log's
-- places [draw_seq, draw_end), which no admission takes (nextLogSeq).
-- draw_fence is the first place not yet written: no consumer reads the
-- log at or past it (nextSQL). All NULL once drawn.

ALTER TABLE queue_events ADD COLUMN draw_base INTEGER;
ALTER TABLE queue_events ADD COLUMN draw_seq INTEGER;
ALTER TABLE queue_events ADD COLUMN draw_end INTEGER;
ALTER TABLE queue_events ADD COLUMN draw_fence INTEGER;

-- min(draw_fence) and max(draw_end) are one look-up each.
CREATE INDEX queue_events_draw_fence ON queue_events (draw_fence) WHERE draw_fence IS NOT NULL;
CREATE INDEX queue_events_draw_end ON queue_events (draw_end) WHERE draw_end IS NOT NULL;
