// tp_query.mjs - runs SQL against a trace in Perfetto's own trace_processor (v55.3 wasm, see
// fetch.sh), under Node. usage: node tp_query.mjs TRACE SQL [SQL...]
// Prints one JSON document: [{"sql":..., "rows":[{col: value}...]} or {"sql":..., "error":...}].
// node tp_query.mjs --serve: one engine for many traces (starting one costs ~2 s of CPU): reads
// one JSON request per line on stdin, {"trace": PATH, "queries": [SQL...]}, and answers each
// with that document on one line. Loading a trace after the previous one's end makes
// trace_processor start a new instance with the default config (rpc.cc: Parse after EOF), so
// every trace is read as a fresh process would read it.
// The engine glue is Perfetto's web/worker build, re-targeted to Node the way the argent
// package does it: hand it the wasm bytes, expose the bridge, talk over a MessageChannel.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import vm from "node:vm";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.env.WEFT_TP_DIR || path.join(here, "..", "..", ".cache", "trace-processor");
const serve = process.argv[2] === "--serve";
const [tracePath, ...queries] = process.argv.slice(2);
if (!serve && (!tracePath || queries.length === 0)) {
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
// The bridge takes requests once the wasm runtime is up and has given it its request buffer
// (reqBufferAddr); a request sent before would be written at address 0. Wait for exactly that,
// not for a fixed time: a loaded machine may need longer, an idle one much less.
for (const t0 = Date.now(); !bridge.reqBufferAddr; await new Promise((r) => setTimeout(r, 5))) {
  if (Date.now() - t0 > 300000) {
    console.error("tp_query.mjs: trace_processor did not start within 300 s");
    process.exit(3);
  }
}

const CHUNK = 32 * 1024 * 1024;
const cell = (v) => (typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v);

async function run(trace, sqls) {
  const bytes = new Uint8Array(readFileSync(trace));
  for (let off = 0; off < bytes.length; off += CHUNK) await engine.parse(bytes.subarray(off, off + CHUNK));
  await engine.notifyEof();
  const results = [];
  for (const sql of sqls) {
    let res;
    try {
      res = await engine.query(sql);
    } catch (e) {
      results.push({ sql, error: String(e && e.message || e) });
      continue;
    }
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
  return results;
}

if (serve) {
  const { createInterface } = await import("node:readline");
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    let out;
    try {
      const req = JSON.parse(line);
      out = await run(req.trace, req.queries);
    } catch (e) {
      out = { fatal: String(e && e.stack || e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
} else {
  const doc = JSON.stringify(await run(tracePath, queries)) + "\n";
  // exit once the pipe has taken all of it (process.exit right after write() cuts a large
  // answer at the pipe's 64 KiB)
  await new Promise((r) => process.stdout.write(doc, r));
}
channel.port1.close();
channel.port2.close();
process.exit(0);
