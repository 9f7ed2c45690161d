import { z } from 'zod';
import { list } from '../../http/fields';

/** Shapes shared by the record schemas (they document the API and drive contract tests). */
export const timestamp = () =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
    .meta({ description: 'ISO 8601 UTC with six fractional digits', example: '2026-11-22T07:27:00.123456Z' });

export const datetime = () =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    .meta({ description: 'YYYY-MM-DD HH:MM:SS (UTC)', example: '2026-11-22 07:27:00' });

export const intId = () => z.number().int();
export const flagValue = () => z.union([z.literal(0), z.literal(1)]);

/** One of the integer values of a named set in src/states.ts (`oneOf(SendStatus)`: 0, 1, 2 or 3). */
export const oneOf = <S extends number>(named: Readonly<Record<string, S>>) => z.union(Object.values(named).map((v) => z.literal(v)));

/** `strIds*` of every bulk delete (spec rule 8). */
export const bulkDeleteBody = z.object({
  strIds: list(z.union([z.string(), z.number()]).transform(String), 100_000).meta({
    description: 'ids of the records to delete (strIds[0], strIds[1], …)',
  }),
});

export const confirmation = (text: string) => z.literal(text);

export const pagination = z
  .object({ page: z.number().int(), per_page: z.number().int(), total: z.number().int() })
  .meta({ description: 'Only when ?page= or ?per_page= was given' });
