import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger';
import { ROOT } from '../../src/paths';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { lines, stream };
}

const requestLine = {
  req: { id: 'r1', method: 'GET', url: '/contacts-type', headers: { publickey: 'pk_abc', secretkey: 'sk_secret' } },
  res: { statusCode: 200 },
  responseTime: 3,
};

/**
 * A child process that logs one request line with createLogger's defaults, its stdout a pipe
 * or — through util-linux `script` — a pseudo-terminal; returns what it printed.
 */
function logFromChild(terminal: boolean): string {
  const program = `const { createLogger } = require(${JSON.stringify(path.join(ROOT, 'src', 'logger.ts'))});
createLogger('info').info(${JSON.stringify(requestLine)}, 'request completed');`;
  const node = [process.execPath, '--require', require.resolve('tsx/cjs'), '-e', program];
  const res = terminal
    ? // script -c takes one shell command line: each argument single-quoted.
      spawnSync('script', ['-qfec', node.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], { encoding: 'utf8' })
    : spawnSync(node[0], node.slice(1), { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`child failed: ${res.stderr}`);
  return res.stdout;
}

describe('createLogger', () => {
  it('writes readable lines when asked: a request in one line, other fields inline, secrets redacted', async () => {
    const { lines, stream } = capture();
    const logger = createLogger('info', stream, { pretty: true });
    logger.info(requestLine, 'request completed');
    logger.warn({ reqId: 'r2', secretKey: 'sk_other' }, 'something odd');
    await new Promise((r) => setImmediate(r));
    const text = lines.join('');
    expect(text).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: GET \/contacts-type → 200 in 3 ms\n/);
    expect(text).toMatch(/WARN: something odd \{"reqId":"r2","secretKey":"\[redacted\]"\}/);
    expect(text).not.toContain('sk_');
    expect(() => JSON.parse(lines[0])).toThrow();
  });

  it('writes JSON lines otherwise, with the secret redacted', () => {
    const { lines, stream } = capture();
    createLogger('info', stream).info(requestLine, 'request completed');
    const line = JSON.parse(lines[0]);
    expect(line).toMatchObject({ level: 30, msg: 'request completed', req: { method: 'GET', headers: { secretkey: '[redacted]' } } });
  });

  it('to stdout: JSON lines when it is a pipe, readable lines when it is a terminal', () => {
    expect(JSON.parse(logFromChild(false))).toMatchObject({ msg: 'request completed', res: { statusCode: 200 } });
    // eslint-disable-next-line no-control-regex -- the terminal's colour codes
    const shown = logFromChild(true).replace(/\x1b\[[0-9;]*m/g, '');
    expect(shown).toMatch(/INFO: GET \/contacts-type → 200 in 3 ms/);
    expect(shown).not.toContain('sk_secret');
  });
});
