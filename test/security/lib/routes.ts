import type { Method, RouteDef } from '../../../src/http/routes';
import { NOT_FOUND_1, NOT_FOUND_2 } from '../../../src/http/envelope';
import { apiRoutes } from '../../../src/resources';
import { fieldsOf, type FieldInfo } from './schema';

/** One method of one route: rule-9 routes (alsoMethods) give one operation per method. */
export interface Operation {
  key: string;
  method: Method;
  path: string;
  def: RouteDef;
}

export const operationKey = (method: Method, path: string) => `${method.toUpperCase()} ${path}`;

/** Every operation of the API, straight from the route table. */
export function operations(defs: RouteDef[] = apiRoutes): Operation[] {
  return defs.flatMap((def) =>
    [def.method, ...(def.alsoMethods ?? [])].map((method) => ({ key: operationKey(method, def.path), method, path: def.path, def })),
  );
}

/** Body fields for POST, query fields for GET/DELETE (what the route's schemas declare). */
export function declaredFields(def: RouteDef): FieldInfo[] {
  return [...fieldsOf(def.body), ...fieldsOf(def.query)];
}

export const isBulkDelete = (def: RouteDef) => declaredFields(def).some((f) => f.name === 'strIds');

/** The route's not-found text (NF1 or NF2), from its id param or its declared failures. */
export function notFoundText(def: RouteDef): string | undefined {
  if (def.id) {
    const e = def.id.notFound() as { errors: unknown };
    return String(e.errors);
  }
  if (def.failures.includes('NF1')) return NOT_FOUND_1;
  if (def.failures.includes('NF2')) return NOT_FOUND_2;
  return undefined;
}

/**
 * Body fields that name another record of the account (an id, a utr, a `contacts_<id>`
 * reference): these must be scoped to the caller just like id params.
 */
const REFERENCE_FIELD = /(^|_)id$|^utr$|^strIds$|_groups_id$|^recipient_id$|^exclude_specific_recipient_id$|^automation_for$|^country$/;
/** Global records anyone may name (reference data, built-in designs). */
const GLOBAL_REFERENCES = new Set(['country', 'country_id', 'state_id', 'city_id', 'template_id', 'select_field']);

export function referenceFields(def: RouteDef): string[] {
  return declaredFields(def)
    .map((f) => f.name)
    .filter((n) => REFERENCE_FIELD.test(n) && !GLOBAL_REFERENCES.has(n));
}
