import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * The lint rule that keeps imports one way (eslint.config.js LAYERS): a source text is linted as
 * if it were a file of src/, so the rule's paths and depths are what `npm run lint` applies.
 */
const root = path.resolve(__dirname, '../..');
// The config is handed over as an object: ESLint's own loader imports it dynamically, which jest's VM refuses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: require(path.join(root, 'eslint.config.js')) });

async function problems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

describe('import direction', () => {
  it('refuses an upward import from a folder', async () => {
    expect(await problems('src/mail/probe.ts', "import { Worker } from '../worker/worker';\nexport const w = Worker;\n")).toEqual([
      expect.stringContaining('src/mail may import only its own layer'),
    ]);
  });

  it('refuses an upward import from a resource family (two levels deep)', async () => {
    const code = "import { Sender } from '../../delivery/sender';\nexport const s = Sender;\n";
    expect(await problems('src/resources/senders/probe.ts', code)).toHaveLength(1);
  });

  it('puts the worker above what it composes: delivery, resources and the public pages may not import it', async () => {
    const code = "import { Worker } from '../worker/worker';\nexport const w = Worker;\n";
    expect(await problems('src/delivery/probe.ts', code)).toHaveLength(1);
    expect(await problems('src/public/probe.ts', code)).toHaveLength(1);
    expect(await problems('src/worker/probe.ts', "import { Sender } from '../delivery/sender';\nexport const s = Sender;\n")).toEqual([]);
  });

  it('refuses an upward import from a top-level file of the lowest layer', async () => {
    expect(await problems('src/config.ts', "import { createApp } from './app';\nexport const a = createApp;\n")).toHaveLength(1);
  });

  it('allows downward imports, own-layer imports and type-only upward imports', async () => {
    expect(await problems('src/delivery/probe.ts', "import { scoped } from '../resources/shared/crud';\nexport const s = scoped;\n")).toEqual([]);
    expect(await problems('src/resources/events/probe.ts', "import { x } from '../events/events.service';\nexport const y = x;\n")).toEqual([]);
    expect(await problems('src/context.ts', "import type { Mailer } from './mail/mailer';\nexport type M = Mailer;\n")).toEqual([]);
  });

});
