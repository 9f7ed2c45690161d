import { createPrivateKey, generateKeyPairSync } from 'node:crypto';

/**
 * A fresh RSA-2048 DKIM key for signing tests: the key as Herald's signing takes it, its PEM (for
 * mailauth's own signer), and a resolver that answers the selector's TXT record as DNS would
 * (split in 255-character strings), for mailauth's dkimVerify.
 */
export function testDkimKey(domain: string, selector: string) {
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  });
  const record = `v=DKIM1; k=rsa; p=${pair.publicKey.toString('base64')}`;
  const resolver = async (name: string) => {
    if (name !== `${selector}._domainkey.${domain}`) throw Object.assign(new Error('NXDOMAIN'), { code: 'ENOTFOUND' });
    return [[record.slice(0, 255), record.slice(255)]];
  };
  return { key: { domain, selector, key: createPrivateKey(pair.privateKey) }, privateKeyPem: pair.privateKey, resolver };
}
