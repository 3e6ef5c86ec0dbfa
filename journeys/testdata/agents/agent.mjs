// What agent-next.mjs and agent-classic.mjs share: the spec a Go test gives
// (JSON as the first argument, or on standard input) and the JSON lines the
// agent prints to standard output, one an event.
//
// A spec:
//   {"url": "http://…/mcp/demo", "token": "rnd_…",
//    "timeoutMs": 60000,                 // each request's timeout
//    "elicit": {"action": "accept", "content": {…}},  // declare elicitation and answer so; omit for no handler
//    "protocol": "2026-07-28" | "auto",  // agent-next only: pin the revision, or negotiate
//    "steps": [{"do": "list_tools"}, {"do": "call_tool", "name": "…", "arguments": {…}}]}
//
// Events: connected, tools, elicitation, progress, result, error, closed. A
// failed step prints an error event and ends the steps; the agent still exits
// 0, since the test asserts on what it printed. A bad spec exits 1.
import { readFileSync } from 'node:fs';

const steps = new Set(['list_tools', 'call_tool']);

export function readSpec() {
  const spec = JSON.parse(process.argv[2] ?? readFileSync(0, 'utf8'));
  if (typeof spec.url !== 'string') throw new Error('spec: url is required');
  for (const step of spec.steps ?? []) {
    if (!steps.has(step.do)) throw new Error(`spec: unknown step ${JSON.stringify(step.do)}`);
  }
  return spec;
}

export function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

export function errorEvent(step, err) {
  return { event: 'error', step, name: err?.name, code: err?.code, message: String(err?.message ?? err), data: err?.data };
}

// runSteps performs the spec's steps with the client's operations, printing
// an event for each; false when one failed.
export async function runSteps(spec, ops) {
  for (const [i, step] of (spec.steps ?? []).entries()) {
    try {
      if (step.do === 'list_tools') {
        emit({ event: 'tools', step: i, tools: (await ops.listTools()).tools });
      } else {
        emit({ event: 'result', step: i, result: await ops.callTool(step.name, step.arguments ?? {}) });
      }
    } catch (err) {
      emit(errorEvent(i, err));
      return false;
    }
  }
  return true;
}

// exit leaves once standard output is written, whatever streams a client
// still holds open.
export function exit(code) {
  process.stdout.write('', () => process.exit(code));
}
