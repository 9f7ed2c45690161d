import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { csvCell, streamCsv } from '../../src/resources/contacts/export-csv';

describe('csvCell', () => {
  it('neutralises every formula start with a leading quote', () => {
    for (const v of ['=1+1', '+A1', '-A1', '@SUM(A1)', '\t=1', '\r=1', '-', '+', '=', '@', '-1-1', '+44 20 7946 0000', '-.5e3']) {
      const out = csvCell(v);
      expect(out.replace(/^"|"$/g, '').startsWith(`'${v[0]}`)).toBe(true);
    }
  });

  it('leaves plain numbers and other values as they are', () => {
    for (const v of ['-5', '+3.2', '-0.25', '.5', '42', "'=already", 'ada@example.com', ' =1', '']) expect(csvCell(v)).toBe(v);
    expect(csvCell(null)).toBe('');
  });

  it('quotes commas, quotes and line breaks as RFC 4180 does', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('=a,b')).toBe(`"'=a,b"`);
  });
});

describe('streamCsv', () => {
  let server: http.Server;
  let port: number;
  let batches: () => AsyncIterable<string[][]>;
  const thrown: unknown[] = [];

  beforeAll(async () => {
    const app = express();
    app.get('/csv', (_req, res) => {
      streamCsv(res, 'x.csv', ['email', 'name'], batches()).catch((err: unknown) => {
        thrown.push(err);
        if (!res.headersSent) res.status(503).json({ status: 'failed', errors: 'down' });
      });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => (thrown.length = 0));

  function get(): Promise<{ status: number; type: string; body: string; complete: boolean }> {
    return new Promise((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${port}/csv`, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          const done = () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body, complete: res.complete });
          res.on('end', done);
          res.on('error', done);
          res.on('aborted', done);
        })
        .on('error', reject);
    });
  }

  const rows = (n: number, from = 0) => Array.from({ length: n }, (_, i) => [`p${from + i}@example.com`, `Name ${from + i}`]);

  it('writes the header, every record and a final line break', async () => {
    batches = async function* () {
      yield rows(3000);
      yield rows(3000, 3000);
    };
    const res = await get();
    expect(res).toMatchObject({ status: 200, type: 'text/csv; charset=utf-8', complete: true });
    const lines = res.body.split('\r\n');
    expect(lines).toHaveLength(6002);
    expect(lines[0]).toBe('email,name');
    expect(lines[6000]).toBe('p5999@example.com,Name 5999');
    expect(lines[6001]).toBe('');
  });

  it('throws before the first byte when the first batch fails: the caller answers the envelope', async () => {
    batches = () => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('database down')) }),
    });
    const res = await get();
    expect(res).toMatchObject({ status: 503, complete: true, body: '{"status":"failed","errors":"down"}' });
    expect(thrown).toHaveLength(1);
  });

  it('cuts the connection when a later batch fails: the file never ends with its final line break', async () => {
    batches = async function* () {
      yield rows(5000);
      throw new Error('connection lost');
    };
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.complete).toBe(false);
    expect(res.body.length).toBeGreaterThan(64 * 1024);
    expect(res.body.endsWith('\r\n')).toBe(false);
    expect((thrown[0] as Error).message).toBe('connection lost');
  });
});
