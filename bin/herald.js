#!/usr/bin/env node
'use strict';
// The `herald` command. Runs the compiled CLI (npm install builds it; `npm run build` rebuilds).
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
