/** Escapes a value for HTML text and attributes; every page and mail Herald writes uses it. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
