// Runs the official conformance CLI (@modelcontextprotocol/conformance) on
// Node 20. The CLI imports fs.globSync, which Node adds in 22, for its
// tier-check command only; a resolve hook hands it fs with a globSync that
// says so, and the server and authorization commands run unchanged.
import { register } from 'node:module';

register('./conformance-hooks.mjs', import.meta.url);
await import('./node_modules/@modelcontextprotocol/conformance/dist/index.js');
