#!/usr/bin/env -S node --no-allocation-site-pretenuring --max-semi-space-size=8
'use strict';
// The `herald` command. Runs the compiled CLI (npm install builds it; `npm run build` rebuilds).
//
// V8's allocation-site pretenuring is off on the command line of every way Herald starts: this
// shebang (`npx herald …`), npm start's script and the Docker image's entrypoint. When a site's
// objects happen to survive while the process warms up, V8 allocates every later object of that
// site straight in the old generation, and a sender's per-message objects made there keep each
// message's young bytes alive until the next full collection — the "slow-scavenge state" some
// processes fell into for their whole life (docs/decisions.md, "Delivery: V8's pretenuring off").
// The young generation's semi-spaces are capped at 8 MB (V8's default grows them to 16): a
// 1,000,000-row import's peak fell from 197–225 MB to 193 MB and a 100,000-recipient send's from
// 164 to 147 MB, the send ~1 % slower, within its noise (docs/decisions.md, "The young generation").
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
