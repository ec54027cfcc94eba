-- Suppliers, teams, API keys, staged import processes and created accounts.
-- Every table the account lifecycle writes; extras and batches come in later migrations.

CREATE TABLE import_suppliers (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  code                 text NOT NULL UNIQUE,
  name                 text NOT NULL,
  status               text NOT NULL DEFAULT 'ONGOING' CHECK (status IN ('ONGOING', 'PAUSED', 'COMPLETE')),
  documents_root       text NOT NULL DEFAULT '',
  send_customer_emails boolean NOT NULL DEFAULT false,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE operations_teams (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are shown once; only a SHA-256 of the secret part is kept. key_id is the public lookup part.
CREATE TABLE api_keys (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL,
  key_id      text NOT NULL UNIQUE,
  secret_hash bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;

-- Account numbers come from a sequence (never rolled back, so never reused) scrambled into A-XXXXXXXX.
CREATE SEQUENCE account_number_seq MINVALUE 1 MAXVALUE 4294967295 NO CYCLE;

CREATE TABLE accounts (
  id                          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  number                      text NOT NULL UNIQUE CHECK (number ~ '^A-[0-9A-F]{8}$'),
  import_supplier_id          bigint NOT NULL REFERENCES import_suppliers (id),
  external_account_number     text NOT NULL,
  operations_team_id          bigint NOT NULL REFERENCES operations_teams (id),
  account_type                text NOT NULL CHECK (account_type IN ('DOMESTIC', 'BUSINESS')),
  billing_name                text,
  billing_address1            text,
  billing_address2            text,
  billing_address3            text,
  billing_address4            text,
  billing_address5            text,
  billing_postcode            text,
  billing_email               text,
  communication_preference    text NOT NULL CHECK (communication_preference IN ('ONLINE', 'PRINT')),
  date_of_sale                date,
  transfer_balance            numeric,
  last_statement_closing_date date,
  billing_period_length       text CHECK (billing_period_length IN ('MONTHLY', 'QUARTERLY')),
  billing_period_start_day    smallint CHECK (billing_period_start_day BETWEEN 1 AND 28),
  created_at                  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (import_supplier_id, external_account_number)
);

CREATE TABLE account_import_processes (
  id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  import_supplier_id      bigint NOT NULL REFERENCES import_suppliers (id),
  external_account_number text NOT NULL,
  -- The validated, normalised account data; NULL when the pair was only marked to skip.
  payload                 jsonb,
  marked_to_skip          boolean NOT NULL DEFAULT false,
  account_id              bigint UNIQUE REFERENCES accounts (id),
  staged_at               timestamptz,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  UNIQUE (import_supplier_id, external_account_number)
);

-- Which import process claims a meter point identifier (staged or imported): one claimant each.
CREATE TABLE meter_point_registrations (
  identifier        text PRIMARY KEY,
  import_process_id bigint NOT NULL REFERENCES account_import_processes (id) ON DELETE CASCADE
);
CREATE INDEX meter_point_registrations_process ON meter_point_registrations (import_process_id);

CREATE TABLE customers (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id           bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  position             smallint NOT NULL,
  title                text,
  given_name           text NOT NULL,
  family_name          text NOT NULL,
  email                text,
  mobile               text,
  landline             text,
  date_of_birth        date,
  opted_into_marketing boolean,
  opted_into_updates   boolean,
  UNIQUE (account_id, position)
);

CREATE TABLE supply_addresses (
  id                                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id                           bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  position                             smallint NOT NULL,
  supply_address1                      text NOT NULL,
  supply_address2                      text,
  supply_address3                      text,
  supply_address4                      text,
  supply_address5                      text,
  supply_postcode                      text NOT NULL,
  customer_at_supply_address_from_date date NOT NULL,
  UNIQUE (account_id, position)
);

CREATE TABLE meter_points (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  supply_address_id bigint NOT NULL REFERENCES supply_addresses (id) ON DELETE CASCADE,
  supply_type       text NOT NULL CHECK (supply_type IN ('ELECTRICITY', 'GAS')),
  identifier        text NOT NULL UNIQUE,
  supply_start_date date NOT NULL
);
CREATE INDEX meter_points_account ON meter_points (account_id);

CREATE TABLE meters (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
  serial_number  text NOT NULL
);
CREATE INDEX meters_meter_point ON meters (meter_point_id);

CREATE TABLE agreements (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
  tariff_code    text NOT NULL,
  effective_from date NOT NULL,
  effective_to   date,
  CHECK (effective_to IS NULL OR effective_to > effective_from)
);
CREATE INDEX agreements_meter_point ON agreements (meter_point_id);

CREATE TABLE account_metadata (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key        text NOT NULL,
  value      text NOT NULL,
  PRIMARY KEY (account_id, key)
);
