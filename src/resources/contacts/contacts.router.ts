import { z } from 'zod';
import { requestActor } from '../../consent/actor';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { id, uploadedFile } from '../../http/fields';
import { blankFields } from '../../http/form';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { streamList } from '../../http/stream';
import { parseIds } from '../shared/crud';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import { addContactBody, contactDetailRecord, contactExportQuery, contactListRecord, contactSearchQuery, importRecord } from './contacts.schemas';
import * as service from './contacts.service';
import { sampleCsv } from './csv-sample';
import { importContactsCsv } from './csv-import.service';
import { exportContactsCsv } from './export.service';
import { listImports } from './import-history.service';
import { SEARCH_DEFAULT_PAGING, searchContacts } from './search.service';
import { bulk } from '../shared/audit';

const tag = 'Contacts';

export const contactRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/contacts/list',
    tag,
    summary: 'List the account’s contacts (newest first; streamed whole unless ?page= is given)',
    list: true,
    response: z.object({ contacts: z.array(contactListRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging, res }) => {
      if (paging) return ok(listPayload('contacts', await service.listContactsPage(ctx, paging)));
      await streamList(res, 'contacts', await service.contactBatches(ctx));
      return ok(null);
    },
  }),
  route({
    method: 'get',
    path: '/contacts/search',
    tag,
    summary: 'Herald extension: the account’s contacts whose address, first name or last name contains q (newest first, one page)',
    description:
      'Case-insensitive; `q` of 3 characters or more is answered from a trigram index, a shorter one reads the ' +
      'account’s contacts (slower on large accounts). Always one page: `?page=&per_page=` as the lists take them, ' +
      'by default the first 50. `contact_type_id` limits it to one contact type (another account’s: not found).',
    query: contactSearchQuery,
    list: true,
    response: z.object({ contacts: z.array(contactListRecord), pagination }),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, query, paging }) =>
      ok(listPayload('contacts', await searchContacts(ctx, { q: query.q, contactTypeId: query.contact_type_id }, paging ?? SEARCH_DEFAULT_PAGING))),
  }),
  route({
    method: 'get',
    path: '/contacts/export',
    tag,
    summary: 'Herald extension: download a contact type’s live contacts or a segment’s members as CSV (text/csv, streamed)',
    description:
      'Exactly one of `contact_type_id` (another account’s: NF1) and `segment_id` (another account’s: NF2, as the ' +
      'segment’s member list). The header is the columns the CSV import reads: the reserved fields, then the ' +
      'account’s custom fields by name; one row per contact (a segment’s hand-added recipients first, as its member ' +
      'list), oldest first, lines ending CRLF, country by name. **Formulas are neutralised:** a value starting with ' +
      '`=`, `+`, `-`, `@`, a tab or a carriage return is written with a leading `\'` so a spreadsheet shows it as text ' +
      'instead of running it (a plain number such as `-5` is left as it is). Failures before the first byte answer ' +
      'the JSON envelope; a failure later cuts the connection, and a cut file never ends with its final line break.',
    query: contactExportQuery,
    response: z.string().meta({ description: 'the CSV file (text/csv; charset=utf-8, Content-Disposition: attachment)' }),
    failures: ['AUTH', 'VAL', 'NF1', 'NF2'],
    permission: 'audience:manage',
    audit: {
      action: 'contacts.exported',
      entry: ({ query }) => (query.segment_id ? { objectKind: 'segment', objectId: query.segment_id, summary: 'CSV export of the segment' } : { objectKind: 'contact_type', objectId: query.contact_type_id ?? null, summary: 'CSV export of the list' }),
    },
    handle: async ({ ctx, query, res, auditNow }) => {
      await exportContactsCsv(ctx, { contactTypeId: query.contact_type_id, segmentId: query.segment_id }, res, auditNow);
      return ok(null);
    },
  }),
  route({
    method: 'post',
    path: '/contacts/add',
    tag,
    summary: 'Add a contact to a contact type',
    description:
      'Custom field values: `custom_field[<name>]=value` (or `<name>=value`), checked by the field’s type; a value sent ' +
      'empty is not stored.',
    body: addContactBody,
    response: confirmation(messages.contactAdded),
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'contact.created',
      entry: ({ body }) => ({ objectKind: 'contact', summary: `added to list ${body.contact_type_id}` }),
    },
    handle: async ({ ctx, body, req }) => {
      await service.addContact(ctx, body, blankFields(req.body), requestActor(req));
      return ok(messages.contactAdded);
    },
  }),
  route({
    method: 'get',
    path: '/contacts/csv-sample/download',
    tag,
    summary: 'Download a sample import file (text/csv); `Accept: application/json` alone gets `{}`',
    response: z.object({}),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, req, res }) => {
      if (req.accepts(['text/csv', 'application/json']) === 'application/json') {
        res.status(200).json({});
        return ok(null);
      }
      const csv = await sampleCsv(ctx);
      res
        .status(200)
        .type('text/csv; charset=utf-8')
        .attachment('contacts-sample.csv')
        .send(csv);
      return ok(null);
    },
  }),
  route({
    method: 'post',
    path: '/contacts/upload-csv',
    tag,
    summary: 'Import contacts from a CSV file (atomic; answers once committed)',
    description:
      'Columns are matched by header (case-insensitive, spaces = underscores) to reserved and custom field ' +
      'names; unknown columns are ignored; `country` may be a name, an ISO code or an id. Existing contacts ' +
      '(same type, same email) are updated, blank cells keep their values (a row that would change nothing ' +
      'writes nothing and counts as unchanged); rows with an invalid email or value ' +
      'are skipped. Values may be separated by `,`, `;` or a tab: whichever the header line holds most often ' +
      '(`,` on a tie). Counts and reasons: GET /contacts/imports.',
    body: z.object({ contact_type_id: id(), file: uploadedFile(['csv']) }),
    file: { field: 'file', maxBytes: (deps) => deps.config.importMaxBytes },
    response: confirmation(messages.imported),
    failures: ['AUTH', 'VAL', 'TOO_LARGE'],
    permission: 'audience:manage',
    audit: {
      action: 'contacts.imported',
      entry: ({ body }) => ({ objectKind: 'contact_type', objectId: body.contact_type_id, summary: `CSV import “${body.file.originalname}”` }),
    },
    handle: async ({ ctx, body, deps, req }) => {
      await importContactsCsv(ctx, {
        contactTypeId: body.contact_type_id,
        filePath: body.file.path,
        fileName: body.file.originalname,
        timeoutMs: deps.config.importTimeoutMs,
        actor: requestActor(req).actor,
      });
      return ok(messages.imported);
    },
  }),
  route({
    method: 'get',
    path: '/contacts/imports',
    tag,
    summary: 'Herald extension: the account’s CSV imports with their counts and first skip reasons; a running one shows its progress',
    list: true,
    response: z.object({ imports: z.array(importRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('imports', await listImports(ctx, paging))),
  }),
  route({
    method: 'get',
    path: '/contacts/details',
    tag,
    summary: 'One contact (country as its id, as a string)',
    id: { name: 'contact_id', notFound: notFound1 },
    response: z.object({ contact: contactDetailRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id: contactId }) => ok({ contact: await service.getContact(ctx, contactId) }),
  }),
  route({
    method: 'post',
    path: '/contacts/update',
    tag,
    summary: 'Update a contact (all fields of add, plus contact_id)',
    description:
      'Custom values sent are set; one sent empty (`custom_field[<name>]=` or `<name>=`, or null in JSON) is cleared; ' +
      'custom fields not sent keep their values.',
    id: { name: 'contact_id', notFound: notFound1, requiredMessage: true },
    body: addContactBody,
    response: confirmation(messages.contactUpdated),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'contact.updated',
      entry: ({ id: contactId }) => ({ objectKind: 'contact', objectId: contactId, summary: 'fields changed' }),
    },
    handle: async ({ ctx, id: contactId, body, req }) => {
      await service.updateContact(ctx, contactId, body, blankFields(req.body));
      return ok(messages.contactUpdated);
    },
  }),
  route({
    method: 'delete',
    path: '/contacts/delete',
    tag,
    summary: 'Delete a contact (it leaves its segments and future sends)',
    id: { name: 'contact_id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'contact.deleted',
      entry: ({ id: contactId }) => ({ objectKind: 'contact', objectId: contactId, summary: 'deleted' }),
    },
    handle: async ({ ctx, id: contactId }) => {
      await service.deleteContacts(ctx, [contactId]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/contacts/bulk-delete',
    tag,
    summary: 'Delete several contacts (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'contact.deleted',
      entry: ({ body }) => ({ objectKind: 'contact', ...bulk(body.strIds, 'contact') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteContacts(ctx, parseIds(body.strIds, notFound1));
      return ok(messages.deleted);
    },
  }),
];
