/**
 * The fencing rule of every claim (recipient rows and the job runner's tables), written once:
 * a claim takes a row by counting an attempt on it, and whatever the claim writes afterwards
 * (an outcome, a release) applies only while the row is still in a claimed state under that
 * same attempt number. A worker that stalled past its lease — another worker has since taken
 * the row over and counted a new attempt — writes nothing, so it can neither overwrite the newer
 * attempt's outcome nor count it twice.
 */
export interface Fence {
  /** The row's states while claimed, as SQL text (`'sending'`, or `'queued'`): constants of src/states.ts. */
  claimedSql: string;
  /** The row's attempt counter column. */
  attempts: string;
}

/**
 * The condition, as SQL over the row alias `row`, with `claimAttempt` the claim's attempt
 * number as SQL text (a column of the statement's values list, or a `?` placeholder).
 */
export function fenceSql(row: string, fence: Fence, claimAttempt: string): string {
  return `${row}.status IN (${fence.claimedSql}) AND ${row}.${fence.attempts} = ${claimAttempt}`;
}
