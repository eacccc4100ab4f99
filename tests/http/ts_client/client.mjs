// The official TypeScript MCP SDK client against a brain behind a proxy, for
// tests/http/test_http_proxy.py: `node client.mjs URL TOKEN [ORIGIN]` lists the tools,
// remembers a note and recalls it four times, then prints what it saw as one JSON line.
//
// URL names the public host (http://brain.example.test:PORT/mcp). Node's fetch will not let a
// caller set Host, so the public name is resolved to 127.0.0.1 here, in the connection's DNS
// lookup: every request then really carries `Host: brain.example.test:PORT`, as a browser's or
// a remote client's would. Each request gets its own X-Request-Id (`ts-N`), which the proxy
// and the servers log, so the test can tell which server answered which call.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, fetch as undiciFetch } from "undici";

const [url, token, origin] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node client.mjs URL TOKEN [ORIGIN]");
  process.exit(2);
}

// Any name resolves to loopback: the test's proxy listens there under the public name.
const loopback = (hostname, options, callback) =>
  options && options.all
    ? callback(null, [{ address: "127.0.0.1", family: 4 }])
    : callback(null, "127.0.0.1", 4);
const dispatcher = new Agent({ connect: { lookup: loopback } });

const sent = []; // [method, request id] of every request, in order
const viaPublicName = async (input, init = {}) => {
  const headers = new Headers(init.headers);
  const id = `ts-${sent.length}`;
  headers.set("x-request-id", id);
  sent.push([init.method ?? "GET", id]);
  return undiciFetch(input, { ...init, headers, dispatcher });
};

const headers = { Authorization: `Bearer ${token}` };
if (origin) headers.Origin = origin;
const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: viaPublicName,
  requestInit: { headers },
});
const client = new Client({ name: "brain-ts-test", version: "1.0.0" });

// A tool call that must succeed: its structured result.
async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name}: ${result.content?.[0]?.text}`);
  return result.structuredContent;
}

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const note = await call("remember", { text: "The lighthouse keeper rows out at dawn." });
  const recalls = [];
  for (let i = 0; i < 4; i++) {
    const before = sent.length;
    const { hits } = await call("recall", { query: "lighthouse keeper" });
    recalls.push({ ids: hits.map((h) => h.id), requests: sent.slice(before).map(([, id]) => id) });
  }
  console.log(JSON.stringify({ tools: tools.map((t) => t.name), remembered: note.id, recalls, sent }));
} finally {
  await client.close();
  await dispatcher.close();
}
