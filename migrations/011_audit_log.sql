-- Who did what, and when, to which batch, supplier, key or account (issue 13): every operational
-- action that changes state, from importctl, the API (as its API key) and, later, the console (as
-- its operator). Written in the action's own transaction where the action has one, so there is no
-- action without its line. Rows are only ever added.
CREATE TABLE audit_log (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor_kind  text NOT NULL CHECK (actor_kind IN ('cli', 'api_key', 'operator')),
  actor       text NOT NULL,
  action      text NOT NULL,
  target_kind text NOT NULL CHECK (target_kind IN ('batch', 'supplier', 'team', 'api_key', 'reference', 'account')),
  target      text NOT NULL,
  detail      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_target ON audit_log (target_kind, target, at DESC);
