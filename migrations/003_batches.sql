-- Cohort uploads driven through the queue pipeline. PostgreSQL is the source of truth for every
-- item's progress: Redis holds only job identifiers and can be rebuilt from these rows.

CREATE TABLE batches (
  id                 uuid PRIMARY KEY,
  import_supplier_id bigint NOT NULL REFERENCES import_suppliers (id),
  operations_team_id bigint NOT NULL REFERENCES operations_teams (id),
  dry_run            boolean NOT NULL DEFAULT false,
  -- UPLOADING while the file streams in; the pipeline starts only once it is complete.
  state              text NOT NULL DEFAULT 'UPLOADING'
                     CHECK (state IN ('UPLOADING', 'RUNNING', 'COMPLETED', 'COMPLETED_WITH_ERRORS', 'CANCELLED')),
  total_items        integer NOT NULL DEFAULT 0,
  -- A client's Idempotency-Key: the same key for the same supplier answers the same batch.
  idempotency_key    text,
  cancel_requested_at timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  finished_at        timestamptz
);
CREATE INDEX batches_supplier_created ON batches (import_supplier_id, created_at DESC);
CREATE UNIQUE INDEX batches_idempotency ON batches (import_supplier_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE batch_items (
  batch_id                uuid NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  line                    integer NOT NULL,
  external_account_number text,
  -- The bundle as uploaded; NULL for a line that was not a bundle (failed at stage parse).
  bundle                  jsonb,
  stage                   text NOT NULL CHECK (stage IN ('parse', 'validate', 'stage', 'process', 'extras')),
  state                   text NOT NULL CHECK (state IN ('waiting', 'active', 'delayed', 'succeeded', 'failed', 'cancelled')),
  -- Bumped by every retry, so a re-enqueued job gets a fresh deterministic job id.
  round                   integer NOT NULL DEFAULT 0,
  attempts                integer NOT NULL DEFAULT 0,
  service_account_number  text,
  -- The envelope the REST endpoint for that stage would have answered.
  error                   jsonb,
  updated_at              timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (batch_id, line)
);
CREATE INDEX batch_items_state ON batch_items (batch_id, state, line);

-- Welcome e-mails: written in the transaction that creates the account (so a dry run or a rollback
-- writes none), sent by the e-mail worker. One row per account, and a worker claims it before
-- sending: a crash between claim and send leaves it unsent rather than sent twice.
CREATE TABLE customer_emails (
  account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  kind       text NOT NULL DEFAULT 'WELCOME',
  recipient  text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  claimed_at timestamptz,
  sent_at    timestamptz
);
CREATE INDEX customer_emails_unsent ON customer_emails (created_at) WHERE sent_at IS NULL;
