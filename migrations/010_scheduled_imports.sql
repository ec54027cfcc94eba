-- The second door (the published v2): one account at a time, scheduled inside a window, run by the
-- same per-account pipeline jobs as a cohort, as a batch of one.

-- A batch of one scheduled account starts no earlier than its window's start; a stage job that
-- finds the window over before the account exists fails the import instead of running late.
ALTER TABLE batches
  ADD COLUMN kind text NOT NULL DEFAULT 'COHORT' CHECK (kind IN ('COHORT', 'SCHEDULED')),
  ADD COLUMN schedule_window_start timestamptz,
  ADD COLUMN schedule_window_end timestamptz;

-- A scheduled account has no operations_team_name of its own: it goes to its supplier's default team.
ALTER TABLE import_suppliers ADD COLUMN default_operations_team_id bigint REFERENCES operations_teams (id);

-- Each scheduling request of a pair, newest answering its status. request_hash tells a re-sent
-- request (the same import again) from a different one.
CREATE TABLE scheduled_imports (
  id                      bigserial PRIMARY KEY,
  import_supplier_id      bigint NOT NULL REFERENCES import_suppliers (id),
  external_account_number text NOT NULL,
  batch_id                uuid NOT NULL UNIQUE REFERENCES batches (id) ON DELETE CASCADE,
  request_hash            text NOT NULL,
  created_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scheduled_imports_pair ON scheduled_imports (import_supplier_id, external_account_number, id DESC);
