/**
 * Statistics (docs/decisions.md, "Message sources and statistics"): the counters of every owner
 * (src/sources), of each tracked link, and per owner and hour; written from recorded events
 * (write.ts) and read (read.ts) here only.
 */
export { applyStatistics } from './write';
export { readCounters, readLinks, readSeries, readTotals, type HourRange, type LinkCounts } from './read';
export { COUNTERS, EVENT_COUNTERS, type Counter, type Counts, type EventCounter, type EventCounts } from './counters';
