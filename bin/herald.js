#!/usr/bin/env -S node --max-semi-space-size=32
'use strict';
// The `herald` command. Runs the compiled CLI (npm install builds it; `npm run build` rebuilds).
// Node's option above (and in `npm start`, the Dockerfile's ENTRYPOINT): V8's young generation up to
// 32 MB a semi-space, so a message still in its SMTP round trip at a scavenge is not promoted to the
// old generation (docs/decisions.md, "Delivery: the young generation"). It must be given to node at
// start; `node bin/herald.js` without it runs Herald the same, only with V8's default (16 MB).
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
