import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The suppliers a request may reach. An API key created with `--supplier` reaches only those; for
 * any other supplier every endpoint answers exactly as it does for a supplier that does not exist
 * (never 403), so a scoped key cannot learn which suppliers exist. null: every supplier (an
 * unscoped key, and the service's own callers: the pipeline and importctl).
 */
export type SupplierScope = ReadonlySet<string> | null;

export const EVERY_SUPPLIER: SupplierScope = null;

/**
 * The scope travels with the request's asynchronous work, set once where every token route's
 * handler is registered (buildApp), so no route can forget it and no service signature carries it.
 * The places that turn a supplier code into a supplier read it: the supplier repository, the
 * imported-account lookups and the batches by id. Work outside a request (the pipeline, importctl)
 * has no scope set and reaches every supplier.
 */
const storage = new AsyncLocalStorage<SupplierScope>();

export function runInScope<T>(scope: SupplierScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The scope of the request this code runs for; every supplier outside a request. */
export const currentScope = (): SupplierScope => storage.getStore() ?? EVERY_SUPPLIER;

/** Whether the current request may reach the supplier with this code. */
export const reaches = (code: string, scope: SupplierScope = currentScope()): boolean => scope === null || scope.has(code);
