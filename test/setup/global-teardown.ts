export default async function globalTeardown(): Promise<void> {
  await globalThis.__HERALD_EMBEDDED__?.stop();
}
