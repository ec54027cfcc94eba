-- The published EnergyAccount (decisions §1): relational tables for what the platform acts on next
-- (customers with preferences and PSR entries, supply addresses, meter points with their industry
-- identifiers, meters, registers, readings, agreements). Everything else a supplier sends stays in
-- the staged payload the account was created from (account_import_processes.payload).

-- Accounts -------------------------------------------------------------------------------------
ALTER TABLE accounts DROP CONSTRAINT accounts_account_type_check;
ALTER TABLE accounts ADD CONSTRAINT accounts_account_type_check CHECK (account_type IN (
  'DOMESTIC', 'BUSINESS', 'MANAGED', 'PORTFOLIO_LEAD', 'DOMESTIC_VACANT', 'BUSINESS_VACANT', 'DOMESTIC_OCCUPIER',
  'BUSINESS_OCCUPIER', 'SYSTEM', 'DOMESTIC_THIRD_PARTY_BILLED', 'BUSINESS_THIRD_PARTY_BILLED'));
ALTER TABLE accounts
  ADD COLUMN billing_attention_of              text,
  ADD COLUMN billing_delivery_point_identifier text,
  ADD COLUMN sales_channel                     text,
  ADD COLUMN sales_subchannel                  text,
  ADD COLUMN unknown_occupier                  boolean,
  ADD COLUMN dd_reference                      text,
  ADD COLUMN document_accessibility            text,
  ADD COLUMN language_preference               text,
  ADD COLUMN last_billed_to_date               date,
  ADD COLUMN last_statement_balance            numeric,
  ADD COLUMN last_statement_issue_date         date,
  ADD COLUMN next_bill_due_date                date,
  ADD COLUMN last_payment_review_date          date,
  ADD COLUMN smart_read_frequency              text,
  ADD COLUMN smart_read_cycle_day              smallint;

ALTER TABLE account_metadata ALTER COLUMN value TYPE jsonb USING to_jsonb(value);

-- Customers ------------------------------------------------------------------------------------
ALTER TABLE customers ALTER COLUMN given_name DROP NOT NULL;
ALTER TABLE customers ALTER COLUMN family_name DROP NOT NULL;
ALTER TABLE customers DROP COLUMN opted_into_marketing;
ALTER TABLE customers
  ADD COLUMN salutation                      text,
  ADD COLUMN pronouns                        text,
  ADD COLUMN role                            text,
  ADD COLUMN opted_into_offers               boolean,
  ADD COLUMN opted_into_recommended          boolean,
  ADD COLUMN opted_into_sms                  boolean,
  ADD COLUMN opted_into_third_parties        boolean,
  ADD COLUMN opted_into_associated_companies boolean,
  ADD COLUMN opted_into_whatsapp             boolean,
  ADD COLUMN is_user_psr_consent_obtained    boolean;

CREATE TABLE customer_psr_entries (
  id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id            bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  position               smallint NOT NULL,
  elec_industry_code     text,
  gas_industry_code      text,
  description            text,
  additional_information text,
  effective_from         timestamptz,
  effective_to           timestamptz
);
CREATE INDEX customer_psr_entries_customer ON customer_psr_entries (customer_id);

-- Supply addresses and meter points ------------------------------------------------------------
ALTER TABLE supply_addresses
  ADD COLUMN supply_delivery_point_identifier     text,
  ADD COLUMN customer_at_supply_address_to_date   date,
  ADD COLUMN is_landlord                          boolean,
  ADD COLUMN label                                text,
  ADD COLUMN property_external_identifier         text;

ALTER TABLE meter_points
  ADD COLUMN position            smallint,
  ADD COLUMN mpid                text,
  ADD COLUMN shipper_mpid        text,
  ADD COLUMN profile_class       smallint,
  ADD COLUMN ssc                 text,
  ADD COLUMN measurement_class   text,
  ADD COLUMN ldz                 text,
  ADD COLUMN export_type         text,
  ADD COLUMN supply_end_date     date,
  ADD COLUMN last_billed_to_date date,
  ADD COLUMN is_deenergised      boolean,
  ADD COLUMN et_in_progress      boolean,
  ADD COLUMN dr_in_progress      boolean;

-- Meters, registers and readings ---------------------------------------------------------------
ALTER TABLE meters RENAME COLUMN serial_number TO meter_serial_number;
ALTER TABLE meters
  ADD COLUMN position                         smallint,
  ADD COLUMN installed_on                     date,
  ADD COLUMN removed_on                       date,
  ADD COLUMN is_prepay                        boolean,
  ADD COLUMN prepay_customer_reference_number text,
  ADD COLUMN smart_type                       text,
  ADD COLUMN smart_device_id                  text,
  ADD COLUMN smart_commissioned_on            date,
  ADD COLUMN gas_number_of_digits             smallint,
  ADD COLUMN units_of_measure                 text,
  ADD COLUMN last_billed_to_date              date;

CREATE TABLE meter_registers (
  id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_id            bigint NOT NULL REFERENCES meters (id) ON DELETE CASCADE,
  position            smallint NOT NULL,
  register_id         text NOT NULL,
  tpr                 text,
  number_of_digits    smallint NOT NULL,
  is_settlement       boolean,
  last_billed_to_date date
);
CREATE INDEX meter_registers_meter ON meter_registers (meter_id);

-- Transfer readings (the opening readings billing starts from) and the reading history.
CREATE TABLE meter_readings (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_id          bigint NOT NULL REFERENCES meters (id) ON DELETE CASCADE,
  kind              text NOT NULL CHECK (kind IN ('TRANSFER', 'HISTORY')),
  position          smallint NOT NULL,
  register_id       text,
  reading_date      date NOT NULL,
  reading_value     numeric NOT NULL,
  reading_type      text NOT NULL,
  billed            boolean,
  validation_status text
);
CREATE INDEX meter_readings_meter ON meter_readings (meter_id);

ALTER TABLE agreements
  ADD COLUMN position                     smallint,
  ADD COLUMN agreed_at                    timestamptz,
  ADD COLUMN rates_agreed_at              timestamptz,
  ADD COLUMN business_contract_identifier text;
