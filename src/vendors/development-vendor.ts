import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { startSandboxVendor } from './sandbox-vendor.js';

/**
 * In development (NODE_ENV=development) with no PAYMENT_VENDORS, the sandbox payment vendor runs in
 * the process, on a free loopback port, under the code `sandbox`: the README's examples and
 * `importctl cohort generate --vendor sandbox` work against `npm run dev` with no set-up. It answers
 * every reference as found, over real HTTP. Never in production or test, and never over vendors
 * someone configured.
 */
export async function withDevelopmentVendor(config: Config, log: Logger): Promise<{ config: Config; close(): Promise<void> }> {
  if (config.nodeEnv !== 'development' || Object.keys(config.paymentVendors).length > 0) return { config, close: async () => undefined };
  const vendor = await startSandboxVendor();
  log.info({ baseUrl: vendor.baseUrl }, "development: the sandbox payment vendor runs in this process as 'sandbox' (set PAYMENT_VENDORS for real ones)");
  const sandbox = Object.freeze({ baseUrl: vendor.baseUrl, apiKey: vendor.apiKey });
  return { config: Object.freeze({ ...config, paymentVendors: Object.freeze({ sandbox }) }), close: () => vendor.close() };
}
