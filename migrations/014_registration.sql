-- Meter-point registration (issue 15; decisions.md §8; docs/registration.md). Every meter point of a
-- created account has a status from the published GbrMeterPointStatus enumeration; those created
-- before this change start at PRE_REGISTRATION (the column's default fills them: no rewrite).
ALTER TABLE meter_points
  ADD COLUMN registration_status text NOT NULL DEFAULT 'PRE_REGISTRATION' CHECK (registration_status IN (
    'PRE_REGISTRATION', 'UNABLE_TO_REGISTER', 'AREGI_SENT', 'NOMINATION_SENT',
    'NOMINATION_REJECTED', 'OFFER_RECEIVED', 'OFFER_REJECTED', 'REGISTRATION_REQUESTED',
    'REGISTRATION_ACCEPTED', 'REGISTRATION_REJECTED', 'WITHDRAWAL_REQUESTED',
    'REGISTRATION_WITHDRAWN', 'OBJECTION_RECEIVED', 'REGISTRATION_OBJECTED', 'MTD_RECEIVED',
    'ON_SUPPLY', 'OPENING_READ_DISPUTED', 'MTD_DISPUTED', 'METER_EXCHANGE_REQUESTED',
    'ERRONEOUS_GAIN_PROPOSED', 'ERRONEOUS_GAIN_ACCEPTED', 'ERRONEOUS_GAIN_REJECTED',
    'ERRONEOUS_GAIN_CANCELLED', 'LOSS_REQUESTED_ERRONEOUS_GAIN', 'LOSS_PENDING_ERRONEOUS_GAIN',
    'LOST_ERRONEOUS_GAIN', 'ERRONEOUS_LOSS_PROPOSED', 'ERRONEOUS_LOSS_ACCEPTED',
    'ERRONEOUS_LOSS_REJECTED', 'ERRONEOUS_LOSS_CANCELLED', 'ET_REQUESTED', 'ET_ACCEPTED',
    'ET_LOSS_PENDING', 'ET_COMPLETED', 'ET_CANCELLED', 'LOSS_REQUESTED', 'LOSS_PENDING', 'LOST',
    'DISCONNECTED', 'ERRONEOUS_LOSS', 'LOSS_OBJECTION_REQUESTED',
    'LOSS_OBJECTION_REMOVAL_REQUESTED', 'LOSS_OBJECTION_ACCEPTED', 'CLOSING_READ_DISPUTE',
    'DE-ENERGISED', 'UNDERGOING_REGISTRATION', 'REGISTRATION_AT_RISK', 'GAIN_PENDING_DAP',
    'LOSS_PENDING_DAP'
  )),
  -- The current attempt (registration_attempts.request_id); NULL before the first.
  ADD COLUMN registration_request_id uuid,
  -- Why the last attempt could not go on (the gateway's reason, a rejection's detail), for operators.
  ADD COLUMN registration_error text,
  ADD COLUMN registration_updated_at timestamptz;
CREATE INDEX meter_points_registration_status ON meter_points (registration_status);

-- One row per attempt at registering a meter point: its request_id is the gateway's Idempotency-Key,
-- new for each attempt and the same on every retry of it.
CREATE TABLE registration_attempts (
  request_id     uuid PRIMARY KEY,
  meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
  attempt        integer NOT NULL,
  marked_at      timestamptz NOT NULL DEFAULT now(),
  -- Set, in its own committed statement, just before the request goes out: a job that finds it set
  -- knows a request may have reached the gateway, and sends again only with the same key.
  send_started_at timestamptz,
  -- When the gateway took it (202 or 409) or refused it (400 or 422).
  answered_at    timestamptz,
  taken          boolean,
  withdrawal_requested_at timestamptz,
  withdrawal_answered_at  timestamptz,
  accepted_at    timestamptz,
  UNIQUE (meter_point_id, attempt)
);

-- A meter point's registration history: every change of status, and every event the gateway sent
-- for it, applied or not (with the reason when not).
CREATE TABLE registration_history (
  id             bigserial PRIMARY KEY,
  meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
  request_id     uuid,
  at             timestamptz NOT NULL DEFAULT now(),
  cause          text NOT NULL,            -- marked, taken, refused, withdrawal, event
  event_id       text,
  event_type     text,
  occurred_at    timestamptz,
  from_status    text,
  to_status      text,
  applied        boolean NOT NULL,
  reason         text,
  detail         jsonb
);
CREATE INDEX registration_history_meter_point ON registration_history (meter_point_id, id);

-- Every event read from the gateway, by its id: an event is applied at most once however often it
-- is delivered. Unknown request ids are kept too (skipped), so a repeat of one is not logged again.
CREATE TABLE registration_events (
  event_id    text PRIMARY KEY,
  request_id  text NOT NULL,
  type        text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);

-- Where the poller is in the gateway's event stream; saved with the events it covers.
CREATE TABLE registration_cursor (
  id         integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  cursor     text,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO registration_cursor (id, cursor) VALUES (1, NULL);
