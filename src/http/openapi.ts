import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { AUTH_REQUIRED, WRONG_KEYS } from './auth';
import { NOT_FOUND_1, NOT_FOUND_2 } from './envelope';
import type { FailureCode, RouteDef } from './routes';

/**
 * The API document, generated from the same route table and zod schemas that validate
 * requests: what /openapi.json says is what the service does.
 */
const failureResponses: Record<FailureCode, { status: number; description: string; errors: z.ZodType }> = {
  AUTH: {
    status: 401,
    description: 'A key header is missing (object) or the pair is wrong (string)',
    errors: z.union([
      z.object({
        PublicKey: z.array(z.literal(AUTH_REQUIRED.PublicKey)).optional(),
        SecretKey: z.array(z.literal(AUTH_REQUIRED.SecretKey)).optional(),
      }),
      z.literal(WRONG_KEYS),
    ]),
  },
  VAL: {
    status: 422,
    description: 'Validation failed: messages keyed by field',
    errors: z.record(z.string(), z.array(z.string())),
  },
  NF1: { status: 404, description: 'Not found (NF1)', errors: z.literal(NOT_FOUND_1) },
  NF2: { status: 404, description: 'Not found (NF2)', errors: z.literal(NOT_FOUND_2) },
  REFUSED: { status: 422, description: 'The operation is refused in the record’s current state', errors: z.string() },
  TOO_LARGE: { status: 413, description: 'The body or file is too large', errors: z.string() },
};

function envelope(key: 'message' | 'errors', status: 'success' | 'failed', schema: z.ZodType) {
  return z.object({ status: z.literal(status), [key]: schema });
}

export function buildOpenApi(defs: RouteDef[], info: { version: string; serverUrl: string }): object {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'PublicKey', { type: 'apiKey', in: 'header', name: 'PublicKey' });
  registry.registerComponent('securitySchemes', 'SecretKey', { type: 'apiKey', in: 'header', name: 'SecretKey' });

  for (const def of defs) {
    const responses: Record<number, { description: string; content: Record<string, { schema: z.ZodType }> }> = {
      200: {
        description: 'Success',
        content: {
          'application/json': {
            schema: envelope(def.inErrors ? 'errors' : 'message', 'success', def.response),
          },
        },
      },
    };
    for (const code of def.failures) {
      const f = failureResponses[code];
      const existing = responses[f.status];
      const schema = envelope('errors', 'failed', f.errors);
      responses[f.status] = existing
        ? { description: `${existing.description}; ${f.description}`, content: { 'application/json': { schema: z.union([existing.content['application/json'].schema, schema]) } } }
        : { description: f.description, content: { 'application/json': { schema } } };
    }
    const queryShape: Record<string, z.ZodType> = {};
    if (def.id) queryShape[def.id.name] = def.id.kind === 'utr' ? z.string() : z.number().int();
    if (def.list) {
      queryShape.page = z.number().int().min(1).optional();
      queryShape.per_page = z.number().int().min(1).max(1000).optional();
    }
    if (def.query && def.query instanceof z.ZodObject) Object.assign(queryShape, def.query.shape);
    const form = def.body ?? (def.file ? z.object({}) : undefined);
    const bodySchema =
      def.file && form instanceof z.ZodObject
        ? form.extend({ [def.file.field]: z.string().meta({ format: 'binary' }) })
        : form;
    for (const method of [def.method, ...(def.alsoMethods ?? [])]) {
      registry.registerPath({
        method,
        path: def.path,
        tags: [def.tag],
        summary: def.summary,
        description: def.description,
        security: [{ PublicKey: [], SecretKey: [] }],
        request: {
          query: Object.keys(queryShape).length ? z.object(queryShape) : undefined,
          body:
            bodySchema && method === 'post'
              ? {
                  content: {
                    'multipart/form-data': { schema: bodySchema },
                    ...(def.file
                      ? {}
                      : {
                          'application/x-www-form-urlencoded': { schema: bodySchema },
                          'application/json': { schema: bodySchema },
                        }),
                  },
                }
              : undefined,
        },
        responses,
      });
    }
  }
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Herald API',
      version: info.version,
      description:
        'Email campaign management. Every call carries the PublicKey and SecretKey headers; every response is ' +
        'the JSON envelope `{status, message}` or `{status: "failed", errors}`.',
    },
    servers: [{ url: info.serverUrl }],
  });
}
