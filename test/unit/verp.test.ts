import { randomBytes } from 'node:crypto';
import { verpAddress, verpToken } from '../../src/bounces/verp';
import { readRecipientToken, recipientToken } from '../../src/recipient-token';

describe('VERP addresses', () => {
  const key = randomBytes(32);
  const token = recipientToken(key, { deliveryId: 4242, userId: 7 });

  it('carries the recipient token and survives a server that folds the case', () => {
    const address = verpAddress('bounces.example.com', token);
    expect(address).toBe(`bounce+${token}@bounces.example.com`);
    for (const seen of [address, address.toUpperCase(), `<${address}>`, ` ${address} `]) {
      const read = verpToken(seen, 'Bounces.Example.com');
      expect(read).toBe(token);
      expect(readRecipientToken(key, read!)).toEqual({ deliveryId: 4242, userId: 7 });
    }
  });

  it('reads nothing from another domain, another local part or a token of the wrong shape', () => {
    expect(verpToken(`bounce+${token}@other.example.com`, 'bounces.example.com')).toBeUndefined();
    expect(verpToken(`bounces+${token}@bounces.example.com`, 'bounces.example.com')).toBeUndefined();
    expect(verpToken(`bounce+${token.slice(1)}@bounces.example.com`, 'bounces.example.com')).toBeUndefined();
    expect(verpToken(`bounce+${token}x@bounces.example.com`, 'bounces.example.com')).toBeUndefined();
    expect(verpToken('fbl@bounces.example.com', 'bounces.example.com')).toBeUndefined();
  });
});
