// An agent on the TypeScript SDK's v2 client (@modelcontextprotocol/client),
// which speaks 2026-07-28: server/discover, per-request _meta, and
// input_required rounds it answers through its elicitation handler. The spec
// and the events are described in agent.mjs. The v2 client has no support for
// the tasks extension (io.modelcontextprotocol/tasks), so a spec cannot ask
// for tasks.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { emit, errorEvent, exit, readSpec, runSteps } from './agent.mjs';

const spec = readSpec();
if (spec.tasks) throw new Error('spec: @modelcontextprotocol/client 2.x does not implement the tasks extension');
const negotiation = spec.protocol === 'auto' ? 'auto' : { pin: spec.protocol ?? '2026-07-28' };
const client = new Client(
  { name: 'rounds-journey-next', version: '2.4.0' },
  { capabilities: spec.elicit ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode: negotiation } },
);
if (spec.elicit) {
  client.setRequestHandler('elicitation/create', async (request) => {
    emit({ event: 'elicitation', params: request.params });
    return spec.elicit;
  });
}
const transport = new StreamableHTTPClientTransport(new URL(spec.url),
  spec.token ? { authProvider: { token: async () => spec.token } } : {});
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
  event: 'connected', protocol: client.getNegotiatedProtocolVersion(), era: client.getProtocolEra(),
  server: client.getServerVersion() ?? null, session: transport.sessionId ?? null,
});
await runSteps(spec, {
  listTools: () => client.listTools(undefined, { timeout: options.timeout }),
  callTool: (name, args) => client.callTool({ name, arguments: args }, options),
});
await client.close();
emit({ event: 'closed' });
exit(0);
