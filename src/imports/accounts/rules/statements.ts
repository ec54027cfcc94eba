import { Decimal } from 'decimal.js';
import { because, type CrossRuleSpec, type NotImplemented, type RuleSpec } from '../../../contract/rules.js';
import { isRecord } from '../../shared/fields.js';
import { notInFuture, parsedString, periodRule } from './helpers.js';
import { accountStatementRules } from './statements-account.js';
import { given } from './statements-scopes.js';

// The account's transactions, ledgers, balances, statement dates, line items, tax items, notes and
// statements. The rules that need the whole account are in statements-account.ts.

const TRANSACTION_SCHEMAS = ['EnergyCharge', 'EnergyCredit', 'EnergyPayment', 'EnergyRepayment', 'EnergySupplyCharge'];

/**
 * A line item's money may differ from price × units by less than one penny. The document does not
 * say how the product is rounded (it has up to 11 decimal places, the net amount up to 10), and
 * source systems round to the penny, up, down or to nearest. Exact equality would refuse such real
 * data; a difference of a penny or more cannot come from rounding to the penny or finer, so it is
 * a wrong net amount, price or number of units. The service migrates GB accounts (pounds).
 */
const ROUNDING_TOLERANCE = new Decimal('0.01');

/** The parsed decimal at `key`, or undefined when absent or failed. */
function decimalAt(obj: unknown, key: string, ctx: Parameters<CrossRuleSpec['cross']>[1], prefix: PropertyKey[] = []): Decimal | undefined {
  const s = parsedString(obj, key, ctx, prefix);
  return s === undefined ? undefined : new Decimal(s);
}

const lineItemNetAmount: CrossRuleSpec = {
  at: 'LineItem',
  codes: ['incorrect_line_item_net_amount'],
  cross: (item, ctx) => {
    const net = decimalAt(item, 'net_amount', ctx);
    const price = decimalAt(item, 'price_per_unit', ctx);
    const units = decimalAt(item, 'number_of_units', ctx);
    // Without a price_per_unit the platform takes the product's rate, which this service does not hold.
    if (!net || !price || !units) return;
    const product = price.times(units);
    if (net.minus(product).abs().greaterThanOrEqualTo(ROUNDING_TOLERANCE)) {
      ctx.addIssue('incorrect_line_item_net_amount', `net_amount ${net.toString()} is not price_per_unit × number_of_units (${product.toString()}), even allowing for rounding to the penny.`, ['net_amount']);
    }
  },
};

const RATE_KEYS = ['rate_band', 'rate_specification_code', 'time_series_specification_code'] as const;

/** A line item is priced by exactly one of a rate band, a rate specification or a time series specification. */
const oneRateSpecification: CrossRuleSpec = {
  at: 'LineItem',
  codes: ['conflicting_rate_band_specification'],
  cross: (item, ctx) => {
    if (!isRecord(item) || RATE_KEYS.some((k) => !ctx.parsed([k]))) return;
    const named = RATE_KEYS.filter((k) => given(item[k]));
    if (named.length === 1) return;
    ctx.addIssue(
      'conflicting_rate_band_specification',
      named.length === 0 ? `A line item needs one of ${RATE_KEYS.join(', ')}.` : `A line item takes only one of ${RATE_KEYS.join(', ')}; this one gives ${named.join(' and ')}.`,
      named.length === 0 ? [] : [named[1] as string],
    );
  },
};

const unitsArePair: RuleSpec = {
  at: 'LineItem.units',
  codes: ['line_item_units_must_be_two_values'],
  value: (v, report) => {
    if (Array.isArray(v) && v.length !== 2) report('line_item_units_must_be_two_values', `units holds the readings that open and close the period: two values, not ${String(v.length)}.`);
    return v;
  },
};

/**
 * A supply charge's amount is its line items' net amounts plus its tax items' amounts (no tax items
 * means no tax). These are sums of figures the payload gives, with no rounding involved, so they
 * must match exactly.
 */
const supplyChargeTotal: CrossRuleSpec = {
  at: 'EnergySupplyCharge',
  codes: ['ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount'],
  cross: (charge, ctx) => {
    if (!isRecord(charge) || !Array.isArray(charge.line_items)) return;
    const amount = decimalAt(charge, 'amount', ctx);
    if (!amount) return;
    let total = new Decimal(0);
    const parts: [string, string][] = [['line_items', 'net_amount'], ['tax_items', 'amount']];
    for (const [list, key] of parts) {
      const entries: unknown = charge[list];
      if (entries === undefined) continue;
      if (!Array.isArray(entries) || !ctx.parsed([list])) return;
      for (let i = 0; i < entries.length; i++) {
        const part = decimalAt(entries[i], key, ctx, [list, i]);
        if (!part) return;
        total = total.plus(part);
      }
    }
    if (!total.equals(amount)) {
      ctx.addIssue(
        'ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount',
        `amount ${amount.toString()} is not the line items' net amounts plus the tax items' amounts (${total.toString()}).`,
        ['amount'],
      );
    }
  },
};

/** A rate specification is resolved per supply point, so a supply charge using one must name it. */
const supplyPointForRateSpecification: CrossRuleSpec = {
  at: 'EnergySupplyCharge',
  codes: ['supply_point_identifier_required_for_rate_specification_code'],
  cross: (charge, ctx) => {
    if (!isRecord(charge) || !Array.isArray(charge.line_items) || given(charge.supply_point_identifier)) return;
    if (!ctx.parsed(['supply_point_identifier'])) return;
    if (charge.line_items.some((li: unknown) => isRecord(li) && given(li.rate_specification_code))) {
      ctx.addIssue('supply_point_identifier_required_for_rate_specification_code', 'A supply charge whose line items use a rate_specification_code must give its supply_point_identifier.', ['supply_point_identifier']);
    }
  },
};

/** A note says something: a body, or at least one attached document. */
const noteHasContent: CrossRuleSpec = {
  at: 'Note',
  codes: ['note_body_or_document_path_not_found'],
  cross: (note, ctx) => {
    if (!isRecord(note) || !ctx.parsed(['body']) || !ctx.parsed(['document_paths'])) return;
    const hasBody = typeof note.body === 'string' && note.body.trim() !== '';
    const hasDocuments = Array.isArray(note.document_paths) && note.document_paths.length > 0;
    if (!hasBody && !hasDocuments) ctx.addIssue('note_body_or_document_path_not_found', 'A note needs a body or document_paths.', []);
  },
};

/** Rules of the document for this part of the account (see index.ts). */
export function statementRules(today: () => string): RuleSpec[] {
  return [
    ...TRANSACTION_SCHEMAS.map((schema) => notInFuture(`${schema}.transaction_date`, 'transaction_in_future', today)),
    ...accountStatementRules(today),
    supplyChargeTotal,
    supplyPointForRateSpecification,
    lineItemNetAmount,
    oneRateSpecification,
    unitsArePair,
    noteHasContent,
    periodRule('Note', 'created_at', 'unpin_at', 'note_unpin_at_earlier_than_creation_date'),
  ];
}

const FILE_STORE = because.configuration('check paths against the migration file store (off unless enabled)');

/** Rules of the document for this part of the account that are not applied, each with its reason. */
export const statementRulesNotImplemented: NotImplemented[] = [
  {
    // The document's Statement has no pdf_context, so read literally the rule would make statement_path
    // required; decisions §3 and the published HistoricalStatements schema make it optional.
    at: 'Statement',
    codes: ['missing_statement_path_or_pdf_context'],
    reason: because.cannotArise('decisions §3 makes statement_path optional, and the document gives a statement no pdf_context to send instead'),
  },
  {
    at: 'EnergyAccount',
    codes: ['historical_statement_billing_document_identifier_missing', 'historical_statement_billing_document_identifier_not_allowed_when_feature_flag_disabled'],
    reason: because.configuration('HISTORICAL_STATEMENT_REQUIRE_SINGLE_BILLING_DOCUMENT_IDENTIFIER'),
  },
  {
    at: 'EnergyAccount',
    codes: ['voucher_transactions_sum_greater_than_voucher_value', 'voucher_charge_transaction_id_not_found', 'voucher_redemption_credit_transaction_id_not_found'],
    reason: because.cannotArise('the document gives the account no vouchers (nor historical_billing_documents), so a payload carrying them is refused as unknown_field'),
  },
  { at: 'EnergySupplyCharge', codes: ['line_items_overlap_already_charged_period'], reason: because.referenceData('record of periods already charged to each supply point') },
  { at: 'EnergySupplyCharge.product_code', codes: ['product_code_does_not_exist'], reason: because.referenceData('products') },
  { at: 'Ledger.ledger_code', codes: ['ledger_code_does_not_exist'], reason: because.referenceData('ledger types') },
  { at: 'NoteDocument.document_path', codes: ['path_does_not_exist_in_file_store'], reason: FILE_STORE },
  { at: 'Statement.statement_path', codes: ['path_does_not_exist_in_file_store'], reason: FILE_STORE },
  {
    at: 'Statement',
    codes: ['received_statement_path_and_pdf_context'],
    reason: because.cannotArise('the document gives Statement no pdf_context field, so a statement sending one is refused as unknown_field'),
  },
];
