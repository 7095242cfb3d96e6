// Connect to a Foxglove WebSocket server with Foxglove's own npm client, subscribe to every
// advertised channel and print one JSON line when done:
//   {"protocol": <subprotocol the server chose>, "channels": {topic: {encoding, schemaName}},
//    "messages": {topic: count}, "firstBytes": {topic: byte length of the first message}}
// Usage: node subscribe_all.js ws://127.0.0.1:PORT SUBPROTOCOL SECONDS
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [url, subprotocol, seconds] = process.argv.slice(2);
const ws = new WebSocket(url, [subprotocol]);
const client = new FoxgloveClient({ ws });
const channels = {};
const topicOf = new Map();
const messages = {};
const firstBytes = {};

function finish(code, error) {
  const out = { protocol: ws.protocol, channels, messages, firstBytes };
  if (error) out.error = String(error);
  console.log(JSON.stringify(out));
  try { client.close(); } catch { /* already closed */ }
  process.exit(code);
}

client.on("error", (error) => finish(1, error?.message ?? error));
client.on("advertise", (advertised) => {
  for (const channel of advertised) {
    channels[channel.topic] = { encoding: channel.encoding, schemaName: channel.schemaName };
    topicOf.set(client.subscribe(channel.id), channel.topic);
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const topic = topicOf.get(subscriptionId);
  messages[topic] = (messages[topic] ?? 0) + 1;
  if (!(topic in firstBytes)) firstBytes[topic] = data.byteLength;
});
ws.on("unexpected-response", (_request, response) => {
  let body = "";
  response.on("data", (chunk) => { body += chunk; });
  response.on("end", () => finish(2, `HTTP ${response.statusCode}: ${body.trim()}`));
});
setTimeout(() => finish(0), Number(seconds) * 1000);
