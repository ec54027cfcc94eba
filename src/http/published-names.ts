/**
 * The published OpenAPI document (test/fixtures/published/openapi.yml) names two values differently
 * from the interface: the platform account number is `kraken_account_number` (ours:
 * `service_account_number`) and the staging answer's supplier is `import_supplier_code` (ours:
 * `import_supplier`). A client generated from that document reads its names, so the responses that
 * carry these values carry both, with the same value; the interface's names stay as they are.
 */

/** `service_account_number` with its published twin `kraken_account_number` beside it (null stays null). */
export function withKrakenAccountNumber<T extends { service_account_number: string | null }>(body: T): T & { kraken_account_number: T['service_account_number'] } {
  return { ...body, kraken_account_number: body.service_account_number };
}

/** `import_supplier` with its published twin `import_supplier_code` beside it. */
export function withImportSupplierCode<T extends { import_supplier: string }>(body: T): T & { import_supplier_code: string } {
  return { ...body, import_supplier_code: body.import_supplier };
}
