/**
 * The nodemailer baselines of bench:send and bench:send-pipeline, run the same way by both: the
 * messages' parameters written to a file, bench/lib/send-baseline.ts in a child process (pinned
 * where the sender under test runs), and what the child and the sink report.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BaselineMode, BaselineParams, BaselineResult } from './send-baseline';
import { SENDER } from './send-fixture';
import { PREHEADER, SUBJECT } from './send-herald';
import { ask, BENCH_LIB, machineBusyMs, nextMessage, spawnNode, type Child } from './send-procs';
import type { SinkStats } from './send-sink';

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** Cores busy over a phase, and what was not the sender's CPU (the sink, PostgreSQL and the neighbours). */
export function machineShare(busy0: number, t0: number, senderCpuMs: number) {
  const busyMs = machineBusyMs() - busy0;
  const wallMs = Date.now() - t0;
  return { coresBusy: round(busyMs / wallMs, 2), busyMs: Math.round(busyMs), restMs: Math.round(busyMs - senderCpuMs) };
}

export interface BaselineRun {
  mode: BaselineMode;
  sink: Child;
  port: number;
  html: string;
  count: number;
  poolSize: number;
  concurrency: number;
  publicUrl: string;
  /** The CPU the sender under test is pinned to (taskset), if any. */
  cpu?: string;
  nodeArgs?: string[];
  /** The key of the `dkim`, `signed`, `pooled` and `minimal` modes (PEM). */
  dkimKey?: string;
}

/** One baseline run: msg/s, its CPU per message and the sink's, the machine's share, what the sink saw. */
export async function runBaseline(r: BaselineRun) {
  const params: BaselineParams = {
    mode: r.mode,
    port: r.port,
    count: r.count,
    poolSize: r.poolSize,
    concurrency: r.concurrency,
    html: r.html,
    subject: SUBJECT,
    preheader: PREHEADER,
    fromName: SENDER.name,
    fromEmail: SENDER.email,
    replyTo: SENDER.replyTo,
    senderAddress: '1 High Street, SW1A 1AA, United Kingdom',
    publicUrl: r.publicUrl,
    prefix: `baseline-${r.mode}-`,
    domain: 'bench-sink.test',
    dkim: r.dkimKey && (r.mode === 'dkim' || r.mode === 'signed' || r.mode === 'pooled' || r.mode === 'minimal') ? { keySelector: 'bench', privateKey: r.dkimKey } : undefined,
  };
  const file = path.join(os.tmpdir(), `herald-bench-baseline-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(params));
  await ask(r.sink, { type: 'reset', keep: 0 });
  try {
    const child = spawnNode(`baseline ${r.mode}`, path.join(BENCH_LIB, 'send-baseline.ts'), [], {
      ts: true,
      ipc: true,
      cpu: r.cpu,
      env: { BENCH_BASELINE: file },
      nodeArgs: r.nodeArgs ?? [],
    });
    const busy0 = machineBusyMs();
    const t0 = Date.now();
    const result = await nextMessage<BaselineResult>(child, 'result', 900_000);
    const machine = machineShare(busy0, t0, result.cpuMs);
    await child.exited;
    const { samples: _samples, ...stats } = await ask<SinkStats>(r.sink, { type: 'stats' });
    return {
      ...result,
      rate: (result.sent / result.ms) * 1000,
      cpuMsPerMessage: round(result.cpuMs / result.sent, 3),
      sinkCpuMsPerMessage: round(stats.cpuMs / Math.max(1, stats.received), 3),
      machine: { ...machine, restMs: machine.restMs - stats.cpuMs },
      sink: stats,
    };
  } finally {
    fs.rmSync(file, { force: true });
  }
}
