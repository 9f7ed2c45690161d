/**
 * The master key every Herald of the test suite uses (HERALD_MASTER_KEY). Test files run in
 * several jest processes, each with its own temporary DATA_DIR, against shared databases: without
 * one key for all, a DKIM key made by one process could not be decrypted by the next.
 */
export const TEST_MASTER_KEY = Buffer.alloc(32, 0x48).toString('base64');
