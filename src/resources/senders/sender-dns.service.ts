import type { Ctx } from '../../context';
import type { Config } from '../../config';
import { dnsFor } from '../../dns';
import { rotateKey, signingDomain } from '../../dkim/keys';
import { checkRecords, domainRecords, type DomainRecords } from '../../dkim/records';
import { notFound1 } from '../../http/errors';
import { findOrFail, liveRows } from '../shared/crud';

/**
 * The DNS records of a sender's domain (GET /sender/dns), checking them now (POST
 * /sender/dns/check) and rotating its DKIM key (POST /sender/dns/rotate). Keys belong to the
 * account and the domain, not to one sender: two senders of a domain share them.
 */
async function senderDomain(ctx: Ctx, id: number): Promise<string> {
  const row = await findOrFail<{ from_email: string }>(liveRows(ctx, 'senders').where('senders.id', id).select('senders.from_email'), notFound1);
  return signingDomain(row.from_email);
}

export async function senderRecords(ctx: Ctx, config: Config, id: number): Promise<DomainRecords> {
  return domainRecords(ctx.db, config, ctx.userId, await senderDomain(ctx, id));
}

export async function checkSenderRecords(ctx: Ctx, config: Config, id: number): Promise<DomainRecords> {
  return checkRecords(ctx.db, config, dnsFor(config), ctx.userId, await senderDomain(ctx, id));
}

export async function rotateSenderKey(ctx: Ctx, config: Config, id: number): Promise<{ selector: string }> {
  const key = await rotateKey(ctx.db, config, ctx.userId, await senderDomain(ctx, id));
  return { selector: key.selector };
}
