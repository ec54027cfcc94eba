-- History imported onto created accounts: notes, financial transactions, historical statements,
-- payment instructions. Every amount is numeric (exact); unique keys make repeats harmless.

CREATE TABLE account_notes (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  body           text,
  -- The supplier's document paths, relative to its documents root, as given.
  document_paths text[] NOT NULL DEFAULT '{}',
  created_at     timestamptz NOT NULL,
  is_pinned      boolean NOT NULL DEFAULT false,
  unpin_at       timestamptz,
  -- Why the note exists when the service wrote it itself (for example moved transactions).
  origin         text NOT NULL DEFAULT 'IMPORTED' CHECK (origin IN ('IMPORTED', 'TRANSACTIONS_MOVED')),
  inserted_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (body IS NOT NULL OR cardinality(document_paths) > 0),
  CHECK (unpin_at IS NULL OR unpin_at >= created_at)
);
CREATE INDEX account_notes_account_body ON account_notes (account_id, md5(coalesce(body, '')));

CREATE TABLE account_transactions (
  id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id              bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  transaction_id          text NOT NULL,
  type                    text NOT NULL CHECK (type IN ('CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE')),
  reason                  text,
  amount                  numeric NOT NULL,
  -- The date on the account; original_transaction_date is set when the import moved it.
  transaction_date        date NOT NULL,
  original_transaction_date date,
  description             text,
  reference               text,
  payment_type            text,
  display_note            text,
  note                    text,
  product_code            text,
  inserted_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, transaction_id)
);

CREATE TABLE transaction_line_items (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_row_id bigint NOT NULL REFERENCES account_transactions (id) ON DELETE CASCADE,
  position           smallint NOT NULL,
  rate_band          text,
  start_date         date NOT NULL,
  end_date           date NOT NULL,
  number_of_units    numeric NOT NULL,
  net_amount         numeric NOT NULL,
  price_per_unit     numeric,
  units              numeric[],
  UNIQUE (transaction_row_id, position)
);

CREATE TABLE transaction_tax_items (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_row_id bigint NOT NULL REFERENCES account_transactions (id) ON DELETE CASCADE,
  position           smallint NOT NULL,
  amount             numeric NOT NULL,
  tax_type           text NOT NULL,
  value_taxed        numeric NOT NULL,
  rate               numeric NOT NULL,
  unit_type          text NOT NULL,
  UNIQUE (transaction_row_id, position)
);

CREATE TABLE historical_statements (
  id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id            bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  statement_id          text NOT NULL,
  bill_period_from_date date NOT NULL,
  bill_period_to_date   date NOT NULL,
  issued_date           date NOT NULL,
  number                text NOT NULL,
  gross_amount          numeric NOT NULL,
  statement_path        text,
  inserted_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, statement_id),
  CHECK (bill_period_to_date >= bill_period_from_date)
);

CREATE TABLE payment_instructions (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  vendor      text NOT NULL,
  reference   text NOT NULL,
  type        text NOT NULL CHECK (type IN ('CARD', 'DIRECT_DEBIT')),
  -- What the vendor answered when asked, kept verbatim.
  details     jsonb NOT NULL,
  inserted_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, vendor, reference)
);
