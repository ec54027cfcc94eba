-- Registration in bulk (issue 15): a supplier may register its accounts automatically from a moment
-- on (the accounts created since), and a batch uploaded with register=true registers its accounts.
-- The events poller's sweep marks what either asks for (src/queue/registration.ts).
ALTER TABLE import_suppliers ADD COLUMN auto_register_since timestamptz;
ALTER TABLE batches ADD COLUMN register boolean NOT NULL DEFAULT false;
-- The sweep's walk over the batches that asked, and over a supplier's accounts created since.
CREATE INDEX batches_register ON batches (created_at) WHERE register AND NOT dry_run;
CREATE INDEX accounts_supplier_created ON accounts (import_supplier_id, created_at);
