/**
 * The headers of the pages Herald serves from its own files (the dashboard under /app, the API
 * reference under /docs): a Content-Security-Policy that lets scripts and styles come only from
 * this origin's files (no inline script or style, no eval, no other origin), forbids framing,
 * and `nosniff`, so no answer of ours is read as a script or a page it is not.
 */
const STRICT_CSP = {
  'default-src': "'none'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self'",
  'connect-src': "'self'",
  'form-action': "'self'",
  'frame-ancestors': "'none'",
  'base-uri': "'none'",
};

/** Directives the strict policy leaves to `default-src 'none'`, which a page may open (frames of its own previews). */
type ExtraDirective = 'frame-src';
export type CspDirective = keyof typeof STRICT_CSP | ExtraDirective;

/**
 * The strict policy, with `widen`'s sources added to their directives (say why at the caller),
 * and `without`'s directives left out (they fall back to `default-src 'none'`: a page that
 * runs no script drops `script-src` and `connect-src`).
 */
export function pageHeaders(widen: Partial<Record<CspDirective, string>> = {}, without: CspDirective[] = []): Record<string, string> {
  const extra = (Object.keys(widen) as CspDirective[]).filter((d) => !(d in STRICT_CSP)).map((d) => [d, "" as string] as const);
  const csp = [...Object.entries(STRICT_CSP), ...extra]
    .filter(([directive]) => !without.includes(directive as CspDirective))
    .map(([directive, sources]) => `${directive} ${[sources, widen[directive as CspDirective]].filter(Boolean).join(' ')}`)
    .join('; ');
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
}
