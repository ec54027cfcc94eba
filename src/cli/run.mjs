#!/usr/bin/env node
// importctl, fast: runs the compiled CLI (dist/, from `npm run build`) when it is at
// least as new as every source file, so a call starts in about half a second instead of compiling
// TypeScript each time (2-3 s). Otherwise, mid-edit or before any build, it runs the sources with
// tsx, exactly as before. `npm run importctl -- <command>`, or this file directly.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const compiled = path.join(root, 'dist', 'src', 'cli', 'importctl.js');

/** The newest modification time of the TypeScript sources the CLI is built from. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.json')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

const fresh = existsSync(compiled) && statSync(compiled).mtimeMs >= newestSource(path.join(root, 'src'));
if (fresh) {
  const { runAsProgram } = await import(pathToFileURL(compiled).href);
  runAsProgram();
} else {
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'src', 'cli', 'importctl.ts'), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exitCode = run.status ?? 1;
}
