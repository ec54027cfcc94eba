import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';

/** bigint ids come back from pg as strings; we keep them as strings so no id is ever rounded. */
type Id = ColumnType<string, never, never>;
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** `date` columns are returned as YYYY-MM-DD strings (see the pg type parser in create-db.ts). */
type DateCol = ColumnType<string, string, string>;
/** `numeric` columns are returned as exact decimal strings, never floats. */
type Numeric = ColumnType<string, string, string>;

export interface ImportSuppliersTable {
  id: Generated<string> & Id;
  code: string;
  name: string;
  status: ColumnType<SupplierStatus, SupplierStatus | undefined, SupplierStatus>;
  documents_root: ColumnType<string, string | undefined, string>;
  send_customer_emails: ColumnType<boolean, boolean | undefined, boolean>;
  /** The team a scheduled (v2) account goes to; it names none of its own. */
  default_operations_team_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Accounts created since then have their meter points registered automatically; null: off. */
  auto_register_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type SupplierStatus = 'ONGOING' | 'PAUSED' | 'COMPLETE';

export interface OperationsTeamsTable {
  id: Generated<string> & Id;
  name: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: Generated<string> & Id;
  name: string;
  key_id: string;
  secret_hash: Buffer;
  created_at: CreatedAt;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** The suppliers a scoped API key reaches; a key with no rows reaches every supplier. */
export interface ApiKeySuppliersTable {
  api_key_id: string;
  import_supplier_id: string;
}

export interface AccountsTable {
  id: Generated<string> & Id;
  number: string;
  import_supplier_id: string;
  external_account_number: string;
  operations_team_id: string;
  account_type: string;
  billing_name: string | null;
  billing_address1: string | null;
  billing_address2: string | null;
  billing_address3: string | null;
  billing_address4: string | null;
  billing_address5: string | null;
  billing_postcode: string | null;
  billing_email: string | null;
  communication_preference: string;
  date_of_sale: DateCol | null;
  transfer_balance: Numeric | null;
  last_statement_closing_date: DateCol | null;
  billing_period_length: string | null;
  billing_period_start_day: number | null;
  billing_attention_of: string | null;
  billing_delivery_point_identifier: string | null;
  sales_channel: string | null;
  sales_subchannel: string | null;
  unknown_occupier: boolean | null;
  dd_reference: string | null;
  document_accessibility: string | null;
  language_preference: string | null;
  last_billed_to_date: DateCol | null;
  last_statement_balance: Numeric | null;
  last_statement_issue_date: DateCol | null;
  next_bill_due_date: DateCol | null;
  last_payment_review_date: DateCol | null;
  smart_read_frequency: string | null;
  smart_read_cycle_day: number | null;
  created_at: CreatedAt;
}

export interface AccountImportProcessesTable {
  id: Generated<string> & Id;
  import_supplier_id: string;
  external_account_number: string;
  payload: ColumnType<unknown, string | null | undefined, string | null>;
  marked_to_skip: ColumnType<boolean, boolean | undefined, boolean>;
  account_id: string | null;
  staged_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface MeterPointRegistrationsTable {
  identifier: string;
  import_process_id: string;
}

export interface CustomersTable {
  id: Generated<string> & Id;
  account_id: string;
  position: number;
  title: string | null;
  given_name: string | null;
  family_name: string | null;
  email: string | null;
  mobile: string | null;
  landline: string | null;
  date_of_birth: DateCol | null;
  salutation: string | null;
  pronouns: string | null;
  role: string | null;
  opted_into_offers: boolean | null;
  opted_into_recommended: boolean | null;
  opted_into_sms: boolean | null;
  opted_into_third_parties: boolean | null;
  opted_into_updates: boolean | null;
  opted_into_associated_companies: boolean | null;
  opted_into_whatsapp: boolean | null;
  is_user_psr_consent_obtained: boolean | null;
}

export interface CustomerPsrEntriesTable {
  id: Generated<string> & Id;
  customer_id: string;
  position: number;
  elec_industry_code: string | null;
  gas_industry_code: string | null;
  description: string | null;
  additional_information: string | null;
  effective_from: ColumnType<Date | null, Date | string | null, Date | string | null>;
  effective_to: ColumnType<Date | null, Date | string | null, Date | string | null>;
}

export interface SupplyAddressesTable {
  id: Generated<string> & Id;
  account_id: string;
  position: number;
  supply_address1: string;
  supply_address2: string | null;
  supply_address3: string | null;
  supply_address4: string | null;
  supply_address5: string | null;
  supply_postcode: string;
  customer_at_supply_address_from_date: DateCol;
  supply_delivery_point_identifier: string | null;
  customer_at_supply_address_to_date: DateCol | null;
  is_landlord: boolean | null;
  label: string | null;
  property_external_identifier: string | null;
}

export interface MeterPointsTable {
  id: Generated<string> & Id;
  account_id: string;
  supply_address_id: string;
  supply_type: string;
  identifier: string;
  supply_start_date: DateCol;
  position: number | null;
  mpid: string | null;
  shipper_mpid: string | null;
  profile_class: number | null;
  ssc: string | null;
  measurement_class: string | null;
  ldz: string | null;
  export_type: string | null;
  supply_end_date: DateCol | null;
  last_billed_to_date: DateCol | null;
  is_deenergised: boolean | null;
  et_in_progress: boolean | null;
  dr_in_progress: boolean | null;
  /** A GbrMeterPointStatus (src/registration/states.ts); PRE_REGISTRATION when created. */
  registration_status: ColumnType<string, string | undefined, string>;
  registration_request_id: ColumnType<string | null, string | null | undefined, string | null>;
  registration_error: ColumnType<string | null, string | null | undefined, string | null>;
  registration_updated_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface RegistrationAttemptsTable {
  request_id: string;
  meter_point_id: string;
  attempt: number;
  marked_at: CreatedAt;
  send_started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  answered_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  taken: boolean | null;
  withdrawal_requested_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  withdrawal_answered_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  accepted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface RegistrationHistoryTable {
  id: Generated<string> & Id;
  meter_point_id: string;
  request_id: string | null;
  at: CreatedAt;
  cause: 'marked' | 'taken' | 'refused' | 'withdrawal' | 'event';
  event_id: string | null;
  event_type: string | null;
  occurred_at: Date | null;
  from_status: string | null;
  to_status: string | null;
  applied: boolean;
  reason: string | null;
  detail: ColumnType<unknown, string | null | undefined, string | null>;
}

export interface RegistrationEventsTable {
  event_id: string;
  request_id: string;
  type: string;
  received_at: CreatedAt;
}

export interface RegistrationCursorTable {
  id: number;
  cursor: string | null;
  updated_at: CreatedAt;
}

export interface MetersTable {
  id: Generated<string> & Id;
  meter_point_id: string;
  meter_serial_number: string;
  position: number | null;
  installed_on: DateCol | null;
  removed_on: DateCol | null;
  is_prepay: boolean | null;
  prepay_customer_reference_number: string | null;
  smart_type: string | null;
  smart_device_id: string | null;
  smart_commissioned_on: DateCol | null;
  gas_number_of_digits: number | null;
  units_of_measure: string | null;
  last_billed_to_date: DateCol | null;
}

export interface MeterRegistersTable {
  id: Generated<string> & Id;
  meter_id: string;
  position: number;
  register_id: string;
  tpr: string | null;
  number_of_digits: number;
  is_settlement: boolean | null;
  last_billed_to_date: DateCol | null;
}

export interface MeterReadingsTable {
  id: Generated<string> & Id;
  meter_id: string;
  kind: 'TRANSFER' | 'HISTORY';
  position: number;
  register_id: string | null;
  reading_date: DateCol;
  reading_value: Numeric;
  reading_type: string;
  billed: boolean | null;
  validation_status: string | null;
}

export interface AgreementsTable {
  id: Generated<string> & Id;
  meter_point_id: string;
  tariff_code: string;
  effective_from: DateCol;
  effective_to: DateCol | null;
  position: number | null;
  agreed_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  rates_agreed_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  business_contract_identifier: string | null;
}

export interface AccountMetadataTable {
  account_id: string;
  key: string;
  /** Any JSON value (decisions §1); written as JSON text. */
  value: ColumnType<unknown, string, string>;
}

export interface AccountNotesTable {
  id: Generated<string> & Id;
  account_id: string;
  body: string | null;
  document_paths: ColumnType<string[], string[] | undefined, string[]>;
  created_at: ColumnType<Date, Date | string, Date | string>;
  is_pinned: ColumnType<boolean, boolean | undefined, boolean>;
  unpin_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  origin: ColumnType<'IMPORTED' | 'TRANSACTIONS_MOVED', 'IMPORTED' | 'TRANSACTIONS_MOVED' | undefined, never>;
  external_id: ColumnType<string | null, string | null | undefined, string | null>;
  is_archived: ColumnType<boolean, boolean | undefined, boolean>;
  inserted_at: CreatedAt;
}

export interface AccountTransactionsTable {
  id: Generated<string> & Id;
  account_id: string;
  transaction_id: string;
  type: string;
  reason: string | null;
  amount: Numeric;
  transaction_date: DateCol;
  original_transaction_date: DateCol | null;
  description: string | null;
  reference: string | null;
  payment_type: string | null;
  display_note: string | null;
  note: string | null;
  product_code: string | null;
  billing_document_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  to_prepay_meter_serial_number: ColumnType<string | null, string | null | undefined, string | null>;
  supply_point_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  inserted_at: CreatedAt;
}

export interface TransactionLineItemsTable {
  id: Generated<string> & Id;
  transaction_row_id: string;
  position: number;
  rate_band: string | null;
  start_date: DateCol;
  end_date: DateCol;
  number_of_units: Numeric;
  net_amount: Numeric;
  price_per_unit: Numeric | null;
  /** numeric[] comes back from pg as a string[] of exact decimals. */
  units: ColumnType<string[] | null, string[] | null, string[] | null>;
  external_rate_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  rate_specification_code: ColumnType<string | null, string | null | undefined, string | null>;
  time_series_specification_code: ColumnType<string | null, string | null | undefined, string | null>;
  /** Written as JSON text. */
  params: ColumnType<unknown, string | null | undefined, string | null>;
}

export interface TransactionTaxItemsTable {
  id: Generated<string> & Id;
  transaction_row_id: string;
  position: number;
  amount: Numeric;
  tax_type: string;
  value_taxed: Numeric;
  rate: Numeric;
  unit_type: string;
  /** Written as JSON text. */
  params: ColumnType<unknown, string | null | undefined, string | null>;
}

export interface HistoricalStatementsTable {
  id: Generated<string> & Id;
  account_id: string;
  statement_id: string;
  bill_period_from_date: DateCol;
  bill_period_to_date: DateCol;
  issued_date: DateCol | null;
  number: string | null;
  gross_amount: Numeric | null;
  statement_path: string | null;
  inserted_at: CreatedAt;
}

export interface PaymentInstructionsTable {
  id: Generated<string> & Id;
  account_id: string;
  vendor: string;
  reference: string;
  type: string;
  details: ColumnType<unknown, string, string>;
  instruction_reference: ColumnType<string | null, string | null | undefined, string | null>;
  customer_reference: ColumnType<string | null, string | null | undefined, string | null>;
  instruction_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  ledger_code: ColumnType<string | null, string | null | undefined, string | null>;
  use_for_scheduled_payments: ColumnType<boolean | null, boolean | null | undefined, boolean | null>;
  valid_from: ColumnType<string | null, string | null | undefined, string | null>;
  inserted_at: CreatedAt;
}

export interface ReferenceValuesTable {
  kind: string;
  value: string;
  source: string;
  retired_at: ColumnType<Date | null, Date | string | null | undefined, unknown>;
  created_at: CreatedAt;
}

export interface ReferenceVersionsTable {
  only_row: ColumnType<boolean, never, never>;
  version: ColumnType<string, never, never>;
}

export type BatchState = 'UPLOADING' | 'RUNNING' | 'COMPLETED' | 'COMPLETED_WITH_ERRORS' | 'CANCELLED';
export type ItemStage = 'parse' | 'validate' | 'stage' | 'process' | 'extras';
export type ItemState = 'waiting' | 'active' | 'delayed' | 'succeeded' | 'failed' | 'cancelled';

export interface BatchesTable {
  id: string;
  import_supplier_id: string;
  operations_team_id: string;
  dry_run: boolean;
  state: ColumnType<BatchState, BatchState | undefined, BatchState>;
  total_items: ColumnType<number, number | undefined, number>;
  idempotency_key: string | null;
  /** The API key that uploaded it (its Idempotency-Key's namespace); null for importctl uploads. */
  api_key_id: ColumnType<string | null, string | null | undefined, string | null>;
  cancel_requested_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Uploaded with register=true: its succeeded accounts' meter points are registered. */
  register: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  kind: ColumnType<BatchKind, BatchKind | undefined, BatchKind>;
  /** A scheduled (v2) account's window: its jobs run no earlier than the start, and not after the end. */
  schedule_window_start: ColumnType<Date | null, Date | null | undefined, Date | null>;
  schedule_window_end: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export type BatchKind = 'COHORT' | 'SCHEDULED';

export interface ScheduledImportsTable {
  id: Generated<string> & Id;
  import_supplier_id: string;
  external_account_number: string;
  batch_id: string;
  request_hash: string;
  created_at: CreatedAt;
}

export interface AuditLogTable {
  id: Generated<string> & Id;
  at: CreatedAt;
  actor_kind: 'cli' | 'api_key' | 'operator';
  actor: string;
  action: string;
  target_kind: AuditTargetKind;
  target: string;
  detail: ColumnType<Record<string, unknown>, string | undefined, never>;
}

export type AuditTargetKind = 'batch' | 'supplier' | 'team' | 'api_key' | 'reference' | 'account' | 'operator';

export type OperatorRole = 'viewer' | 'operator';

export interface OperatorsTable {
  id: Generated<string> & Id;
  name: string;
  role: OperatorRole;
  password_hash: string;
  created_at: CreatedAt;
  password_set_at: CreatedAt;
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** A supplier's webhook URL and the events it is sent (migrations/013_webhooks.sql). */
export interface SupplierWebhooksTable {
  id: Generated<string>;
  supplier_id: string;
  url: string;
  /** The signing secret, whsec_<base64>: never logged, shown once when added. */
  secret: string;
  events: ColumnType<WebhookEventType[], WebhookEventType[], WebhookEventType[]>;
  created_at: CreatedAt;
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export type WebhookEventType = 'batch.finished' | 'account.failed';
export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one webhook: the outbox row, and what its last attempt got back. */
export interface WebhookDeliveriesTable {
  id: Generated<string>;
  webhook_id: string;
  supplier_id: string;
  batch_id: string | null;
  event_id: string;
  event_type: WebhookEventType;
  payload: ColumnType<unknown, string, never>;
  created_at: CreatedAt;
  state: ColumnType<WebhookDeliveryState, WebhookDeliveryState | undefined, WebhookDeliveryState>;
  attempts: ColumnType<number, number | undefined, number>;
  last_status_code: ColumnType<number | null, number | null | undefined, number | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  last_response: ColumnType<string | null, string | null | undefined, string | null>;
  last_attempt_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  delivered_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  enqueued_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface BatchItemsTable {
  batch_id: string;
  line: number;
  external_account_number: string | null;
  bundle: ColumnType<unknown, string | null, string | null>;
  stage: ItemStage;
  state: ItemState;
  round: ColumnType<number, number | undefined, number>;
  attempts: ColumnType<number, number | undefined, number>;
  service_account_number: string | null;
  error: ColumnType<unknown, string | null | undefined, string | null>;
  updated_at: CreatedAt;
}

export interface CustomerEmailsTable {
  account_id: string;
  kind: ColumnType<string, string | undefined, string>;
  recipient: string;
  created_at: CreatedAt;
  claimed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  sent_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface Database {
  import_suppliers: ImportSuppliersTable;
  operations_teams: OperationsTeamsTable;
  api_keys: ApiKeysTable;
  api_key_suppliers: ApiKeySuppliersTable;
  accounts: AccountsTable;
  account_import_processes: AccountImportProcessesTable;
  meter_point_registrations: MeterPointRegistrationsTable;
  customers: CustomersTable;
  customer_psr_entries: CustomerPsrEntriesTable;
  supply_addresses: SupplyAddressesTable;
  meter_points: MeterPointsTable;
  meters: MetersTable;
  meter_registers: MeterRegistersTable;
  meter_readings: MeterReadingsTable;
  agreements: AgreementsTable;
  account_metadata: AccountMetadataTable;
  account_notes: AccountNotesTable;
  account_transactions: AccountTransactionsTable;
  transaction_line_items: TransactionLineItemsTable;
  transaction_tax_items: TransactionTaxItemsTable;
  historical_statements: HistoricalStatementsTable;
  payment_instructions: PaymentInstructionsTable;
  batches: BatchesTable;
  batch_items: BatchItemsTable;
  scheduled_imports: ScheduledImportsTable;
  audit_log: AuditLogTable;
  supplier_webhooks: SupplierWebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  operators: OperatorsTable;
  registration_attempts: RegistrationAttemptsTable;
  registration_history: RegistrationHistoryTable;
  registration_events: RegistrationEventsTable;
  registration_cursor: RegistrationCursorTable;
  customer_emails: CustomerEmailsTable;
  reference_values: ReferenceValuesTable;
  reference_versions: ReferenceVersionsTable;
}

export type Db = Kysely<Database>;
/** A connection or an open transaction: repository functions take either. */
export type Executor = Kysely<Database> | Transaction<Database>;

export type ImportSupplier = Selectable<ImportSuppliersTable>;
export type OperationsTeam = Selectable<OperationsTeamsTable>;
export type NewAccount = Insertable<AccountsTable>;
