-- Every documented field of the published extras (decisions §3): notes' external_id and is_archived;
-- transactions' billing_document_identifier, to_prepay_meter_serial_number, supply_point_identifier and
-- their line and tax items' rate identifiers and params; statements whose issued_date, number and
-- gross_amount are optional; payment instructions' ledger and scheduling fields and every published type.

ALTER TABLE account_notes
  ADD COLUMN external_id text,
  ADD COLUMN is_archived boolean NOT NULL DEFAULT false;
-- A supplier's own note id names one note of the account: the natural key of a repeated import.
CREATE UNIQUE INDEX account_notes_external_id ON account_notes (account_id, external_id) WHERE external_id IS NOT NULL;

ALTER TABLE account_transactions
  ADD COLUMN billing_document_identifier   text,
  ADD COLUMN to_prepay_meter_serial_number text,
  ADD COLUMN supply_point_identifier       text;

ALTER TABLE transaction_line_items
  ADD COLUMN external_rate_identifier       text,
  ADD COLUMN rate_specification_code        text,
  ADD COLUMN time_series_specification_code text,
  ADD COLUMN params                         jsonb;

ALTER TABLE transaction_tax_items
  ADD COLUMN params jsonb;

ALTER TABLE historical_statements
  ALTER COLUMN issued_date DROP NOT NULL,
  ALTER COLUMN number DROP NOT NULL,
  ALTER COLUMN gross_amount DROP NOT NULL;

-- Which types and vendors a deployment takes is reference data (decisions §6), checked by the service.
ALTER TABLE payment_instructions DROP CONSTRAINT payment_instructions_type_check;
ALTER TABLE payment_instructions
  ADD COLUMN instruction_reference      text,
  ADD COLUMN customer_reference         text,
  ADD COLUMN instruction_identifier     text,
  ADD COLUMN ledger_code                text,
  ADD COLUMN use_for_scheduled_payments boolean,
  ADD COLUMN valid_from                 date;
