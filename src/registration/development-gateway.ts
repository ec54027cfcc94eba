import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { startSandboxGateway } from './sandbox-gateway.js';

/**
 * In development (NODE_ENV=development) with no REGISTRATION_GATEWAY_URL, the sandbox registration
 * gateway (sandbox-gateway.ts) runs in the process on a free loopback port: it accepts every request,
 * then reports the supply start on its date. Never in production (marking then answers "no
 * registration gateway is configured") or test, and never over a gateway someone configured.
 */
export async function withDevelopmentGateway(config: Config, log: Logger): Promise<{ config: Config; close(): Promise<void> }> {
  if (config.nodeEnv !== 'development' || config.registrationGateway !== undefined) return { config, close: async () => undefined };
  const gateway = await startSandboxGateway({ key: randomBytes(24).toString('base64url') });
  log.info({ url: gateway.url }, 'development: the sandbox registration gateway runs in this process (set REGISTRATION_GATEWAY_URL for a real one)');
  return { config: Object.freeze({ ...config, registrationGateway: Object.freeze({ url: gateway.url, key: gateway.key }) }), close: () => gateway.close() };
}
