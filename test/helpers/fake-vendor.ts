import {
  SANDBOX_VENDOR_API_KEY,
  startSandboxVendor,
  type SandboxBehaviour,
  type SandboxRequest,
  type SandboxVendor,
} from '../../src/vendors/sandbox-vendor.js';

/** The tests' name for the sandbox vendor: one implementation, so the demo and the tests agree. */
export type FakeVendor = SandboxVendor;
export type FakeVendorBehaviour = SandboxBehaviour;
export type FakeVendorRequest = SandboxRequest;
export const FAKE_VENDOR_API_KEY = SANDBOX_VENDOR_API_KEY;

export function startFakeVendor(opts: { apiKey?: string; defaultBehaviour?: SandboxBehaviour } = {}): Promise<FakeVendor> {
  return startSandboxVendor(opts);
}
