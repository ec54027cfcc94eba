-- Completion webhooks (issue 13): a supplier's URLs told, signed, when a batch finishes or an
-- account fails. The deliveries are an outbox: written by the statement that records the event
-- (src/pipeline/items.repository.ts), so an event that happened has its deliveries and a rolled-back
-- one has none; the webhooks queue sends them afterwards (src/queue/webhook-*.ts).

CREATE TABLE supplier_webhooks (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  supplier_id bigint NOT NULL REFERENCES import_suppliers (id),
  url         text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
  -- The signing secret in Standard Webhooks form (whsec_<base64>). Kept, not hashed: every delivery
  -- is signed with it. Shown once, when the webhook is added.
  secret      text NOT NULL CHECK (secret LIKE 'whsec_%'),
  events      text[] NOT NULL CHECK (cardinality(events) > 0 AND events <@ ARRAY['batch.finished', 'account.failed']),
  created_at  timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);
-- What the outbox inserts join on, for every recorded failure: only enabled webhooks matter.
CREATE INDEX supplier_webhooks_enabled ON supplier_webhooks (supplier_id) WHERE disabled_at IS NULL;
CREATE INDEX supplier_webhooks_supplier ON supplier_webhooks (supplier_id, created_at);

CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  webhook_id       uuid NOT NULL REFERENCES supplier_webhooks (id),
  supplier_id      bigint NOT NULL REFERENCES import_suppliers (id),
  batch_id         uuid REFERENCES batches (id) ON DELETE CASCADE,
  -- The event's id (the webhook-id header): the same on every attempt, so a receiver can drop a
  -- repeat. Deterministic, so recording an event twice cannot make a second delivery.
  event_id         text NOT NULL,
  event_type       text NOT NULL CHECK (event_type IN ('batch.finished', 'account.failed')),
  payload          jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error       text,
  -- The start of the receiver's answer (about 1 KB), for operators.
  last_response    text,
  last_attempt_at  timestamptz,
  delivered_at     timestamptz,
  -- When the relay handed it to the queue; NULL: not yet (the relay's and the sweep's work list).
  enqueued_at      timestamptz,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_supplier ON webhook_deliveries (supplier_id, created_at DESC);
CREATE INDEX webhook_deliveries_batch ON webhook_deliveries (batch_id, created_at DESC);
-- The relay's work list (not yet handed to the queue) and the sweep's walk over what is pending.
CREATE INDEX webhook_deliveries_unenqueued ON webhook_deliveries (created_at) WHERE state = 'pending' AND enqueued_at IS NULL;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (id) WHERE state = 'pending';

-- Wakes the relay once the inserting transaction commits (a NOTIFY is delivered only on commit, and
-- repeats within one transaction are folded into one). The periodic sweep covers a missed one.
CREATE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_deliveries', '');
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
  FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_notify();
