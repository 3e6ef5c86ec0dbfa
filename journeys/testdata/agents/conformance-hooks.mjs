// Module resolve hook for conformance.mjs: the conformance CLI's "fs" becomes
// fs-node20.mjs.
const shim = new URL('./fs-node20.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
