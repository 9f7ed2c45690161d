import fs from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { readUpload } from '../../src/resources/contacts/csv-sniff';

/**
 * The CSV import reads its upload once per pass through one FileHandle (csv-import.service.ts):
 * a pass cut short (PostgreSQL refused a row, the import restarts staging every row) must
 * leave the handle readable for the next pass. It did not: the pass was read through
 * `handle.createReadStream({ autoClose: false })`, whose destroy closes the handle, and the
 * second pass hung with its COPY open.
 */
const CHUNK = 64 * 1024;
let dir: string;
let file: string;
let content: Buffer;
let handle: FileHandle;

beforeAll(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'herald-read-upload-'));
  file = path.join(dir, 'upload.csv');
  // Not a multiple of the chunk size: the last read is short.
  content = Buffer.from(Array.from({ length: 40_000 }, (_, i) => `row-${i}@read.test,First ${i}\n`).join(''));
  await fs.promises.writeFile(file, content);
});

beforeEach(async () => {
  handle = await open(file, 'r');
});

afterEach(async () => {
  await handle.close();
});

afterAll(async () => {
  await fs.promises.rm(dir, { recursive: true, force: true });
});

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Takes `n` chunks of a pass, then cuts it short with a read in flight (as a failed pipeline does). */
async function cutShort(stream: Readable, n: number): Promise<void> {
  let taken = 0;
  stream.on('data', () => {
    taken += 1;
    if (taken === n) stream.destroy(new Error('the COPY failed'));
  });
  stream.on('error', () => undefined);
  await new Promise((resolve) => stream.once('close', resolve));
}

it('reads the whole upload in chunks of at most the given size', async () => {
  const sizes: number[] = [];
  const stream = readUpload(handle, CHUNK);
  stream.on('data', (c: Buffer) => sizes.push(c.length));
  expect((await readAll(stream)).equals(content)).toBe(true);
  expect(Math.max(...sizes)).toBeLessThanOrEqual(CHUNK);
});

it('reads the whole upload again after a pass that was cut short, and leaves the handle open', async () => {
  await cutShort(readUpload(handle, CHUNK), 3);
  // Let anything the destroyed pass left in flight land first.
  await new Promise((r) => setTimeout(r, 20));
  expect(handle.fd).toBeGreaterThanOrEqual(0);
  expect((await readAll(readUpload(handle, CHUNK))).equals(content)).toBe(true);
  expect((await readAll(readUpload(handle, CHUNK))).equals(content)).toBe(true);
});

it('ends at once on an empty file', async () => {
  const empty = path.join(dir, 'empty.csv');
  await fs.promises.writeFile(empty, '');
  const h = await open(empty, 'r');
  try {
    expect((await readAll(readUpload(h, CHUNK))).length).toBe(0);
  } finally {
    await h.close();
  }
});

it('fails (does not hang) when the handle is closed under it', async () => {
  await handle.close();
  await expect(readAll(readUpload(handle, CHUNK))).rejects.toMatchObject({ code: 'EBADF' });
});

// Why readUpload exists: Node closes a FileHandle when a stream made by its
// createReadStream() is destroyed, whatever `autoClose` says. Should Node change that, this
// test says so (readUpload would still be right).
it('(Node) destroying handle.createReadStream({ autoClose: false }) closes the handle', async () => {
  await cutShort(handle.createReadStream({ start: 0, autoClose: false, highWaterMark: CHUNK }), 3);
  await new Promise((r) => setTimeout(r, 20));
  expect(handle.fd).toBe(-1);
});
