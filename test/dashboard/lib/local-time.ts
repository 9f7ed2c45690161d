/**
 * A time as a person types it into a `datetime-local` control in zone `tz`: `seconds` ahead of
 * now (whole seconds), the value to type and the instant it names.
 */
export function localAhead(tz: string, seconds: number): { local: string; utc: Date } {
  const utc = new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(utc)
      .map((p) => [p.type, p.value]),
  );
  return { local: `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`, utc };
}
