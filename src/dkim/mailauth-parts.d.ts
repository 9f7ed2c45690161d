/**
 * The pieces of mailauth's DKIM signer that src/dkim/sign.ts calls directly (mailauth ships no
 * typings for them). Pinned with mailauth (~4.13.3); test/unit/dkim-sign.test.ts checks the
 * result against mailauth's own dkimSign and dkimVerify, so a change in them fails a test.
 */
declare module 'mailauth/lib/tools' {
  interface ParsedHeader {
    key: string;
    casedKey: string;
    line: Buffer;
  }
  export function parseHeaders(buf: Buffer): { parsed: ParsedHeader[]; original: Buffer };
  export function getSigningHeaderLines(parsed: ParsedHeader[], fieldNames: string): { keys: string; headers: ParsedHeader[] };
  export function formatSignatureHeaderLine(type: 'DKIM', values: Record<string, unknown>, folded: boolean): string;
}

declare module 'mailauth/lib/dkim/header' {
  export function generateCanonicalizedHeader(
    type: 'DKIM',
    signingHeaderLines: { keys: string; headers: unknown[] },
    options: { signingDomain: string; selector: string; algorithm: string; canonicalization: string; bodyHash: string; signTime?: Date },
  ): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> };
}

declare module 'mailauth/lib/dkim/body' {
  export function dkimBody(canonicalization: string, hashAlgo: string, maxBodyLength: number | false): { update(chunk: Buffer): void; digest(encoding: 'base64'): string };
}
