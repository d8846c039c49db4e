// The declarations (index.d.ts and the generated tools.d.ts) compile, and type a client's calls:
// test/types/usage.ts holds typed calls and calls that must not compile (@ts-expect-error).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));

test("the generated declarations type the tools' inputs and outputs", async () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const done = await run(process.execPath, [tsc, "-p", join(HERE, "types", "tsconfig.json")]).catch((err) => err);
  assert.equal(done.code ?? 0, 0, `${done.stdout}${done.stderr}`);
});
