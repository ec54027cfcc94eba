-- Operator accounts for the console at /admin/ (issue 13): each operator signs in with a name and a
-- password of their own, so the audit log can say who did what and a viewer can watch without
-- acting. Passwords are stored only as scrypt hashes, with their parameters, so they can be raised
-- later without resetting anyone. A disabled operator is kept (the audit log names them) and can no
-- longer sign in; their sessions end at their next request.
CREATE TABLE operators (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
  role          text NOT NULL CHECK (role IN ('viewer', 'operator')),
  password_hash text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  password_set_at timestamptz NOT NULL DEFAULT now(),
  disabled_at   timestamptz
);

-- The console's own changes are audited too: an operator's creation, role, password and disabling.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_kind_check
  CHECK (target_kind IN ('batch', 'supplier', 'team', 'api_key', 'reference', 'account', 'operator'));

-- The console's account page lists an account's items across batches, and the batches page lists
-- every supplier's batches newest first: both without reading every row.
CREATE INDEX batch_items_external ON batch_items (external_account_number);
CREATE INDEX batches_created ON batches (created_at DESC, id DESC);
