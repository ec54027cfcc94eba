-- Positions of a list's entries as integers: lists are bounded by the request (5,000 entries at most,
-- decisions §7's spirit), which a smallint would still hold, but a position is never the place for a
-- second limit that would turn a valid request into a server error.
ALTER TABLE customers ALTER COLUMN position TYPE integer;
ALTER TABLE supply_addresses ALTER COLUMN position TYPE integer;
ALTER TABLE customer_psr_entries ALTER COLUMN position TYPE integer;
ALTER TABLE meter_points ALTER COLUMN position TYPE integer;
ALTER TABLE meters ALTER COLUMN position TYPE integer;
ALTER TABLE meter_registers ALTER COLUMN position TYPE integer;
ALTER TABLE meter_readings ALTER COLUMN position TYPE integer;
ALTER TABLE agreements ALTER COLUMN position TYPE integer;
