#!/usr/bin/env -S node --no-allocation-site-pretenuring
'use strict';
// The `herald` command. Runs the compiled CLI (npm install builds it; `npm run build` rebuilds).
//
// V8's allocation-site pretenuring is off on the command line of every way Herald starts: this
// shebang (`npx herald …`), npm start's script and the Docker image's entrypoint. When a site's
// objects happen to survive while the process warms up, V8 allocates every later object of that
// site straight in the old generation, and a sender's per-message objects made there keep each
// message's young bytes alive until the next full collection — the "slow-scavenge state" some
// processes fell into for their whole life (docs/decisions.md, "Delivery: V8's pretenuring off").
// A V8 flag belongs on the command line: Node documents changing one with v8.setFlagsFromString
// after the VM has started as undefined behaviour.
const path = require('node:path');
const fs = require('node:fs');
const cli = path.join(__dirname, '..', 'dist', 'src', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write('Herald is not built yet: run `npm run build` (npm install does it too).\n');
  process.exit(1);
}
require(cli).buildProgram().parseAsync(process.argv).catch((err) => {
  process.stderr.write(`${err && err.message ? err.message : String(err)}\n`);
  process.exit(1);
});
