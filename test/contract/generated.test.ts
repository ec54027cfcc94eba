import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, generate, readContract, withExampleExtensions, type Contract } from '../../src/contract/generate.js';

/** Names of the schemas reachable from `root`, itself included. */
function reachable(contract: Contract, root: string): Set<string> {
  const seen = new Set([root]);
  const todo = [root];
  while (todo.length > 0) {
    const s = contract.schemas[todo.pop() as string];
    const refs = s?.oneOf ?? Object.values(s?.properties ?? {}).flatMap((p) => [p.ref, p.items?.ref]);
    for (const r of refs) {
      if (!r || seen.has(r)) continue;
      seen.add(r);
      todo.push(r);
    }
  }
  return seen;
}

describe('the contract generated from the published document', () => {
  const contract = readContract();

  it('is what the generator writes today: schemas.generated.ts was not edited by hand or left stale', () => {
    expect(readFileSync(GENERATED_FILE, 'utf8')).toBe(generate(withExampleExtensions(contract)));
  });

  it('holds the whole EnergyAccount: 101 schemas and 656 properties, as published', () => {
    const names = reachable(contract, 'EnergyAccount');
    expect(names.size).toBe(101);
    const properties = [...names].reduce((n, name) => n + Object.keys(contract.schemas[name]?.properties ?? {}).length, 0);
    expect(properties).toBe(656);
  });

  it('names its source', () => {
    expect(contract.source).toMatchObject({ repository: 'api-evangelist/edf-energy', path: 'openapi/edf-energy-kraken-data-import-openapi.yml' });
    expect(contract.source.sha256).toMatch(/^[0-9a-f]{64}$/);
  });
});
