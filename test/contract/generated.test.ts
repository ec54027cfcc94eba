import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, generate, reachableSchemas, readContract, withExampleExtensions } from '../../src/contract/generate.js';

describe('the contract generated from the published document', () => {
  const contract = readContract();

  it('is what the generator writes today: schemas.generated.ts was not edited by hand or left stale', () => {
    expect(readFileSync(GENERATED_FILE, 'utf8')).toBe(generate(withExampleExtensions(contract)));
  });

  it('holds the whole EnergyAccount: 101 schemas and 656 properties, as published', () => {
    const names = reachableSchemas(contract, 'EnergyAccount');
    expect(names.size).toBe(101);
    const properties = [...names].reduce((n, name) => n + Object.keys(contract.schemas[name]?.properties ?? {}).length, 0);
    expect(properties).toBe(656);
  });

  it('names its source', () => {
    expect(contract.source).toMatchObject({ repository: 'api-evangelist/edf-energy', path: 'openapi/edf-energy-kraken-data-import-openapi.yml' });
    expect(contract.source.sha256).toMatch(/^[0-9a-f]{64}$/);
  });
});
