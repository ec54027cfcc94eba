-- API keys scoped to suppliers. A key with rows here reaches only those suppliers: for every other
-- supplier it is as if the supplier did not exist (404/400 "not found", never 403), so a scoped key
-- cannot even learn which suppliers exist. A key with no rows reaches every supplier, as before.
CREATE TABLE api_key_suppliers (
  api_key_id         bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  import_supplier_id bigint NOT NULL REFERENCES import_suppliers (id) ON DELETE CASCADE,
  PRIMARY KEY (api_key_id, import_supplier_id)
);

-- A client's Idempotency-Key belongs to the API key that sent it: two keys that pick the same
-- Idempotency-Key get two batches, and one key can never be answered another key's batch.
-- NULL for batches uploaded with no API key (importctl); those share one namespace, as before.
ALTER TABLE batches ADD COLUMN api_key_id bigint REFERENCES api_keys (id);
DROP INDEX batches_idempotency;
CREATE UNIQUE INDEX batches_idempotency ON batches (import_supplier_id, COALESCE(api_key_id, 0), idempotency_key) WHERE idempotency_key IS NOT NULL;
