// node:fs with a globSync on Node 20, where it does not exist (see conformance.mjs).
import fs from 'node:fs';

export * from 'node:fs';
export default fs;
export const globSync = fs.globSync ?? (() => {
  throw new Error('fs.globSync needs Node 22 (the conformance CLI uses it only in tier-check)');
});
