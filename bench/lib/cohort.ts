import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { utcDate } from '../../src/clock.js';
import { generateCohort, type AccountBundle } from '../../src/cohort/generate.js';
import { resolveDocumentKey } from '../../src/documents/document-store.js';
import { VENDOR_CODE } from './env.js';

export interface CohortSpec {
  count: number;
  supplier: string;
  /** The supplier's documents_root: PDFs are written under docsDir/<root>/<path>. */
  documentsRoot: string;
  prefix: string;
  seed: number;
  docsDir: string;
}

/** Meter point identifiers of a bundle (they must be unique across every cohort of a database). */
export function identifiersOf(bundle: AccountBundle): string[] {
  const addresses = bundle.account.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>;
  return addresses.flatMap((a) => a.meter_points.map((m) => m.identifier));
}

/** Generates a cohort (every account valid), writing its PDFs to the documents folder; yields each bundle. */
export function* cohortWithDocuments(spec: CohortSpec): Generator<AccountBundle> {
  const today = utcDate(new Date());
  for (const { bundle, documents } of generateCohort({ count: spec.count, supplier: spec.supplier, prefix: spec.prefix, seed: spec.seed, vendor: VENDOR_CODE, today })) {
    for (const d of documents) {
      const key = resolveDocumentKey(spec.documentsRoot, d.path);
      if (!key.ok) throw new Error(`generated document path refused: ${key.reason}`);
      const file = path.join(spec.docsDir, ...key.key.split('/'));
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, d.body);
    }
    yield bundle;
  }
}

export interface CohortFile {
  file: string;
  count: number;
  bytes: number;
  identifiers: Set<string>;
}

/** The cohort as an NDJSON file (one bundle per line), ready to stream as an upload. */
export function writeCohortFile(spec: CohortSpec, file: string): CohortFile {
  const fd = openSync(file, 'w');
  let bytes = 0;
  let count = 0;
  const identifiers = new Set<string>();
  try {
    for (const bundle of cohortWithDocuments(spec)) {
      const line = `${JSON.stringify(bundle)}\n`;
      bytes += writeSync(fd, line);
      count++;
      for (const id of identifiersOf(bundle)) identifiers.add(id);
    }
  } finally {
    closeSync(fd);
  }
  return { file, count, bytes, identifiers };
}

/**
 * A cohort kept in memory whose meter points do not collide with `avoid` (another cohort in the same
 * database): the generator picks its identifier range from a hash of prefix and seed, so on the rare
 * clash the next seed is used (its PDFs overwrite the first attempt's, which have the same paths).
 */
export function cohortAvoiding(spec: CohortSpec, avoid: ReadonlySet<string>): AccountBundle[] {
  for (let attempt = 0; attempt < 10; attempt++) {
    const bundles = [...cohortWithDocuments({ ...spec, seed: spec.seed + attempt })];
    if (!bundles.some((b) => identifiersOf(b).some((id) => avoid.has(id)))) return bundles;
  }
  throw new Error(`no seed near ${spec.seed} gives cohort ${spec.prefix} meter points clear of the other cohorts`);
}
