-- 0008_seat_features: seats of a section marked with what a buyer may need
-- to know or ask for (boxoffice.Section.Features: wheelchair spaces,
-- companion seats, restricted views), as JSON: {"A-1": ["wheelchair"]}.
-- NULL for a section without any. It mirrors
-- sqlite/migrations/0008_seat_features.sql.

ALTER TABLE sections ADD COLUMN features jsonb;
