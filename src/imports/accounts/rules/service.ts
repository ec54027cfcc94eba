import type { RuleSpec } from '../../../contract/rules.js';
import { isRecord, isValidMpanCore, isValidMprn } from '../../shared/fields.js';
import { entryKey, parsedString, shown, stringRule, uniqueInList } from './helpers.js';

// Rules of decisions §1 that the document does not list, and the document's own rules that
// check the same things (both are reported: clients of either keep working).

/** Every meter point of the account with its path, for those whose identifier parsed. */
export function meterPointsOf(account: unknown, parsed: (path: readonly PropertyKey[]) => boolean) {
  const found: { identifier: string; address: number; path: PropertyKey[] }[] = [];
  if (!isRecord(account) || !Array.isArray(account.supply_addresses)) return found;
  account.supply_addresses.forEach((sa: unknown, i) => {
    if (!isRecord(sa) || !Array.isArray(sa.meter_points)) return;
    sa.meter_points.forEach((mp: unknown, j) => {
      const path = ['supply_addresses', i, 'meter_points', j];
      if (!isRecord(mp) || typeof mp.identifier !== 'string' || !parsed([...path, 'identifier'])) return;
      found.push({ identifier: mp.identifier, address: i, path });
    });
  });
  return found;
}

export const serviceRules: RuleSpec[] = [
  stringRule('ElectricityMeterPoint.identifier', 'invalid_mpan', (s) => `${shown(s)} is not a valid MPAN core: 13 digits with a valid check digit.`, isValidMpanCore, { source: 'service' }),
  stringRule('GasMeterPoint.identifier', 'invalid_mprn', (s) => `${shown(s)} is not a valid MPRN: 6 to 10 digits.`, isValidMprn, { source: 'service' }),
  {
    // The account is keyed by (supplier, external account number): this service needs the number,
    // which the document leaves optional.
    at: 'EnergyAccount',
    codes: ['required', 'blank'],
    source: 'service',
    cross: (account, ctx) => {
      if (!isRecord(account) || !ctx.parsed(['external_account_number'])) return;
      const ext = account.external_account_number;
      if (ext === undefined) ctx.addIssue('required', 'This field is required.', ['external_account_number']);
      else if (ext === '') ctx.addIssue('blank', 'This field may not be blank.', ['external_account_number']);
    },
  },
  {
    at: 'EnergyAccount',
    codes: ['duplicate_meter_point'],
    source: 'service',
    cross: (account, ctx) => {
      const seen = new Set<string>();
      for (const mp of meterPointsOf(account, ctx.parsed)) {
        if (seen.has(mp.identifier)) ctx.addIssue('duplicate_meter_point', `Meter point ${mp.identifier} appears more than once in this account.`, [...mp.path, 'identifier']);
        seen.add(mp.identifier);
      }
    },
  },
  {
    at: 'EnergyAccount.supply_addresses',
    codes: ['duplicate_meter_points_on_different_supply_addresses_provided'],
    attach: 'EnergyAccount',
    cross: (account, ctx) => {
      const firstAddress = new Map<string, number>();
      for (const mp of meterPointsOf(account, ctx.parsed)) {
        const first = firstAddress.get(mp.identifier);
        if (first === undefined) firstAddress.set(mp.identifier, mp.address);
        else if (first !== mp.address) {
          ctx.addIssue('duplicate_meter_points_on_different_supply_addresses_provided', `Meter point ${mp.identifier} is also on supply address ${String(first)}.`, [...mp.path, 'identifier']);
        }
      }
    },
  },
  uniqueInList(
    'EnergyLegacySupplyAddress.meter_points',
    'duplicate_meter_points_provided',
    entryKey('identifier'),
    (id) => `Meter point ${id} appears more than once at this supply address.`,
    (i) => [i, 'identifier'],
  ),
  ...['EnergyAccount', 'EnergyCustomer'].flatMap((schema): RuleSpec[] => {
    const key = (entry: unknown, i: number, ctx: Parameters<ReturnType<typeof entryKey>>[2]) => parsedString(entry, 'key', ctx, ['metadata', i]);
    const repeats = (code: string): RuleSpec => ({
      at: schema,
      codes: [code],
      ...(code === 'duplicate_key' ? { source: 'service' as const } : {}),
      cross: (obj, ctx) => {
        if (!isRecord(obj) || !Array.isArray(obj.metadata)) return;
        const seen = new Set<string>();
        obj.metadata.forEach((entry: unknown, i) => {
          const k = key(entry, i, ctx);
          if (k === undefined) return;
          if (seen.has(k)) ctx.addIssue(code, `Metadata key ${JSON.stringify(k)} is given more than once.`, ['metadata', i, 'key']);
          seen.add(k);
        });
      },
    });
    return [repeats('metadata_has_duplicate_keys'), repeats('duplicate_key')];
  }),
];
