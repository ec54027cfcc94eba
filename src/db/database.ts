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
  given_name: string;
  family_name: string;
  email: string | null;
  mobile: string | null;
  landline: string | null;
  date_of_birth: DateCol | null;
  opted_into_marketing: boolean | null;
  opted_into_updates: boolean | null;
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
}

export interface MeterPointsTable {
  id: Generated<string> & Id;
  account_id: string;
  supply_address_id: string;
  supply_type: string;
  identifier: string;
  supply_start_date: DateCol;
}

export interface MetersTable {
  id: Generated<string> & Id;
  meter_point_id: string;
  serial_number: string;
}

export interface AgreementsTable {
  id: Generated<string> & Id;
  meter_point_id: string;
  tariff_code: string;
  effective_from: DateCol;
  effective_to: DateCol | null;
}

export interface AccountMetadataTable {
  account_id: string;
  key: string;
  value: string;
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
}

export interface HistoricalStatementsTable {
  id: Generated<string> & Id;
  account_id: string;
  statement_id: string;
  bill_period_from_date: DateCol;
  bill_period_to_date: DateCol;
  issued_date: DateCol;
  number: string;
  gross_amount: Numeric;
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
  inserted_at: CreatedAt;
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
  created_at: CreatedAt;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
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
  supply_addresses: SupplyAddressesTable;
  meter_points: MeterPointsTable;
  meters: MetersTable;
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
  customer_emails: CustomerEmailsTable;
}

export type Db = Kysely<Database>;
/** A connection or an open transaction: repository functions take either. */
export type Executor = Kysely<Database> | Transaction<Database>;

export type ImportSupplier = Selectable<ImportSuppliersTable>;
export type OperationsTeam = Selectable<OperationsTeamsTable>;
export type NewAccount = Insertable<AccountsTable>;
