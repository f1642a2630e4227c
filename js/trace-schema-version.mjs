// The trace schema's version, read from the schema itself (nbgrad/trace/schema.json, the one
// place it is written) when the widget is built or tested: the bundle gets the number, not the
// whole schema (esbuild's and vitest's `define`).
import { readFileSync } from "node:fs";

const schema = JSON.parse(readFileSync(new URL("../nbgrad/trace/schema.json", import.meta.url), "utf8"));
export const TRACE_SCHEMA_VERSION = String(schema.properties.version.const);
