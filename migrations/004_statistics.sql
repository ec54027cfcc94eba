-- Statistics of the documents the service keeps whole: no statement filters, joins or sorts on
-- them, so the planner never reads their statistics, and gathering them made every ANALYZE of
-- these tables read and decompress thousands of multi-kilobyte documents. The service analyzes its
-- tables as they grow (src/db/statistics.ts); with these columns skipped that stays cheap.
ALTER TABLE batch_items ALTER COLUMN bundle SET STATISTICS 0;
ALTER TABLE batch_items ALTER COLUMN error SET STATISTICS 0;
ALTER TABLE account_import_processes ALTER COLUMN payload SET STATISTICS 0;
