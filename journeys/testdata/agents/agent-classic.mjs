// An agent on the TypeScript SDK v1 (@modelcontextprotocol/sdk), which speaks
// 2025-11-25: initialize, an Mcp-Session-Id, and elicitation/create requests
// on the open tool call that its handler answers. At the end it ends its
// session (DELETE). The spec and the events are described in agent.mjs.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { emit, errorEvent, exit, readSpec, runSteps } from './agent.mjs';

const spec = readSpec();
if (spec.tasks) throw new Error('spec: this agent does not ask for tasks');
const client = new Client(
  { name: 'rounds-journey-classic', version: '1.32.2' },
  { capabilities: spec.elicit ? { elicitation: { form: {} } } : {} },
);
if (spec.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    emit({ event: 'elicitation', params: request.params });
    return spec.elicit;
  });
}
const transport = new StreamableHTTPClientTransport(new URL(spec.url),
  spec.token ? { requestInit: { headers: { Authorization: `Bearer ${spec.token}` } } } : {});
const options = {
  timeout: spec.timeoutMs ?? 60000,
  onprogress: (p) => emit({ event: 'progress', ...p }),
};
try {
  await client.connect(transport, { timeout: options.timeout });
} catch (err) {
  emit(errorEvent('connect', err));
  exit(0);
  await new Promise(() => {}); // exit leaves once the event is written
}
emit({
  event: 'connected', protocol: transport.protocolVersion ?? null, era: 'legacy',
  server: client.getServerVersion() ?? null, session: transport.sessionId ?? null,
});
await runSteps(spec, {
  listTools: () => client.listTools(undefined, { timeout: options.timeout }),
  callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, options),
});
try {
  await transport.terminateSession();
} catch (err) {
  emit(errorEvent('terminate', err));
}
await client.close();
emit({ event: 'closed' });
exit(0);
