/**
 * Statistics (docs/decisions.md, "Message sources and statistics"): the counters of every owner
 * (src/sources), of each tracked link, of each automation email, and per owner and hour; written
 * from recorded events and queued rows (write.ts, emails.ts) and read (read.ts) here only.
 */
export { applyStatistics, countQueued } from './write';
export {
  readCounters,
  readEmailCounters,
  readLinks,
  readSentByDay,
  readSeries,
  readTotals,
  type HourRange,
  type LinkCounts,
} from './read';
export { COUNTERS, EVENT_COUNTERS, type Counter, type Counts, type EventCounter, type EventCounts } from './counters';
export type { EmailCounts } from './emails';
