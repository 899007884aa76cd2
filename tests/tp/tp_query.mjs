// tp_query.mjs - runs SQL against a trace in Perfetto's own trace_processor (v55.3 wasm, see
// fetch.sh), under Node. usage: node tp_query.mjs TRACE SQL [SQL...]
// Prints one JSON document: [{"sql":..., "rows":[{col: value}...]} or {"sql":..., "error":...}].
// The engine glue is Perfetto's web/worker build, re-targeted to Node the way the argent
// package does it: hand it the wasm bytes, expose the bridge, talk over a MessageChannel.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import vm from "node:vm";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.env.WEFT_TP_DIR || path.join(here, "..", "..", ".cache", "trace-processor");
const [tracePath, ...queries] = process.argv.slice(2);
if (!tracePath || queries.length === 0) {
  console.error("usage: node tp_query.mjs TRACE SQL [SQL...]");
  process.exit(2);
}

function patchGlue(src) {
  const edits = [
    ["this.useMemory64 = hasMemory64Support();", "this.useMemory64 = false;"],
    ["locateFile: (s) => s,", "locateFile: (s) => s, wasmBinary: globalThis.__TP_WASM_BYTES,"],
    ["const wasmBridge = new wasm_bridge_1.WasmBridge();",
     "const wasmBridge = new wasm_bridge_1.WasmBridge(); globalThis.__TP_bridge = wasmBridge;"],
  ];
  for (const [from, to] of edits) {
    if (!src.includes(from)) throw new Error("glue anchor not found: " + from);
    src = src.replace(from, to);
  }
  return src;
}

const { EngineBase } = await import(pathToFileURL(path.join(dir, "engine.mjs")).href);
Object.defineProperty(globalThis, "self", { value: globalThis, writable: true, configurable: true });
globalThis.WorkerGlobalScope = function WorkerGlobalScope() {};
Object.defineProperty(globalThis, "location", {
  value: { href: pathToFileURL(dir).href + "/" }, writable: true, configurable: true });
// The engine prints progress on stdout; keep stdout for the JSON result alone.
console.log = console.info = (...a) => process.stderr.write(a.map(String).join(" ") + "\n");
const origWarn = console.warn.bind(console);
console.warn = (...a) => { if (!/Unexpected QueryResult field/.test(String(a[0] ?? ""))) origWarn(...a); };

globalThis.__TP_WASM_BYTES = new Uint8Array(readFileSync(path.join(dir, "trace_processor.wasm")));
vm.runInThisContext(patchGlue(readFileSync(path.join(dir, "engine_bundle.node.js"), "utf8")),
                    { filename: "engine_bundle.node.patched.js" });
const bridge = globalThis.__TP_bridge;
const channel = new MessageChannel();
bridge.initialize(channel.port1);

class Engine extends EngineBase {
  constructor(port) {
    super();
    this.mode = "WASM";
    this.id = "v55.3";
    this.port = port;
    port.onmessage = (m) => { if (m.data instanceof Uint8Array) this.onRpcResponseBytes(m.data); };
  }
  rpcSendRequestBytes(data) { this.port.postMessage(data); }
}
const engine = new Engine(channel.port2);
await new Promise((r) => setTimeout(r, Number(process.env.WEFT_TP_INIT_MS || 1500)));

const bytes = new Uint8Array(readFileSync(tracePath));
const CHUNK = 32 * 1024 * 1024;
for (let off = 0; off < bytes.length; off += CHUNK) await engine.parse(bytes.subarray(off, off + CHUNK));
await engine.notifyEof();

const cell = (v) => (typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v);
const results = [];
for (const sql of queries) {
  const res = await engine.query(sql);
  const err = res.error();
  if (err) { results.push({ sql, error: err }); continue; }
  const cols = res.columns();
  const rows = [];
  for (const it = res.iter({}); it.valid(); it.next()) {
    const row = {};
    for (const c of cols) row[c] = cell(it.get(c));
    rows.push(row);
  }
  results.push({ sql, rows });
}
process.stdout.write(JSON.stringify(results) + "\n");
channel.port1.close();
channel.port2.close();
process.exit(0);
