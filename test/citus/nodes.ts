import type { Knex } from 'knex';
import { makeAccount, type TestAccount } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';

/**
 * Where accounts live on the test cluster, read from Citus's own catalog: an account's rows of
 * every tenant table sit on the worker node of its shard (distributed by user_id, colocated).
 */

/** The worker nodes' ports, ascending. */
export async function workerPorts(db: Knex): Promise<number[]> {
  const { rows } = await db.raw('SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY 1');
  return (rows as Array<{ node_port: number }>).map((w) => w.node_port);
}

/** The port of the worker node that holds `table`'s rows of account `userId`. */
export async function nodeOf(db: Knex, table: string, userId: number): Promise<number> {
  const { rows } = await db.raw(
    'SELECT nodeport FROM citus_shards WHERE table_name = ?::regclass AND shardid = get_shard_id_for_distribution_column(?, ?::int)',
    [table, table, userId],
  );
  return (rows as Array<{ nodeport: number }>)[0].nodeport;
}

/** The number of `table`'s rows of account `userId` on its shard, read on that node (not through the coordinator's planner). */
export async function rowsOnShard(db: Knex, table: string, userId: number): Promise<number> {
  const { rows } = await db.raw(
    `SELECT result FROM run_command_on_placements(?, $$SELECT count(*) FROM %s WHERE user_id = ${Number(userId)}$$) WHERE shardid = get_shard_id_for_distribution_column(?, ?::int)`,
    [table, table, userId],
  );
  return Number((rows as Array<{ result: string }>)[0].result);
}

/**
 * New accounts (each with one contact) until every worker node holds one; the first account
 * seen on each node, by port. Ids hash to shards: 40 accounts all on one of two nodes by chance
 * has a probability of 2^-39.
 */
export async function accountsOnEachNode(db: Knex, name = 'Spread'): Promise<Map<number, TestAccount>> {
  const ports = await workerPorts(db);
  const seen = new Map<number, TestAccount>();
  for (let i = 0; i < 40 && seen.size < ports.length; i++) {
    const a = await makeAccount(db, name);
    await makeContacts(db, a, await makeContactType(db, a), [{ email: `one@${a.id}.example.com` }]);
    const port = await nodeOf(db, 'contacts', a.id);
    if (!seen.has(port)) seen.set(port, a);
  }
  return seen;
}
