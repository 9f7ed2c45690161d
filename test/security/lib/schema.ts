import type { z } from 'zod';

/**
 * What a form field of a route's zod schema accepts, read from the schema itself so that a
 * new field (or a new route) is fuzzed without anyone listing it here.
 */
export type FieldKind =
  | { kind: 'string'; email: boolean; max?: number }
  | { kind: 'int' }
  | { kind: 'flag' }
  | { kind: 'enum'; values: string[] }
  | { kind: 'array'; item: FieldKind }
  | { kind: 'map' }
  | { kind: 'file' }
  | { kind: 'unknown' };

export interface FieldInfo {
  name: string;
  kind: FieldKind;
  optional: boolean;
}

interface Def {
  type: string;
  format?: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, string>;
  values?: unknown[];
  shape?: Record<string, z.ZodType>;
  checks?: Array<{ _zod: { def: { check: string; maximum?: number } } }>;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

function maxLength(d: Def): number | undefined {
  return d.checks?.find((c) => c._zod.def.check === 'max_length')?._zod.def.maximum;
}

export function kindOf(schema: z.ZodType): FieldKind {
  const d = defOf(schema);
  switch (d.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
    case 'catch':
      return kindOf(d.innerType!);
    case 'pipe': {
      const inner = defOf(d.in!);
      // z.preprocess(fn, schema): what is accepted is the schema after the function.
      if (inner.type === 'transform') return kindOf(d.out!);
      const first = kindOf(d.in!);
      const out = defOf(d.out!);
      if (first.kind === 'string' && out.type === 'string' && out.format === 'email') return { ...first, email: true };
      return first;
    }
    case 'string':
      return { kind: 'string', email: d.format === 'email', max: maxLength(d) };
    case 'number':
      return { kind: 'int' };
    case 'literal':
      return d.values?.length === 2 && d.values.includes(0) && d.values.includes(1) ? { kind: 'flag' } : { kind: 'enum', values: (d.values ?? []).map(String) };
    case 'enum':
      return { kind: 'enum', values: Object.values(d.entries ?? {}) };
    case 'array':
      return { kind: 'array', item: kindOf(d.element!) };
    case 'record':
      return { kind: 'map' };
    case 'custom':
      return { kind: 'file' };
    case 'union':
      return kindOf(d.options![0]);
    default:
      return { kind: 'unknown' };
  }
}

function isOptional(schema: z.ZodType): boolean {
  const d = defOf(schema);
  if (d.type === 'optional') return true;
  if (d.type === 'pipe') return isOptional(d.out!);
  return false;
}

/** The top-level fields of an object schema (body or query), with what each accepts. */
export function fieldsOf(schema: z.ZodType | undefined): FieldInfo[] {
  if (!schema) return [];
  const d = defOf(schema);
  if (d.type !== 'object' || !d.shape) return [];
  return Object.entries(d.shape).map(([name, s]) => ({ name, kind: kindOf(s), optional: isOptional(s) }));
}
