import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation } from '../shared/schemas';
import {
  designPreviewResponse,
  designRecord,
  designSavedResponse,
  designsListResponse,
  previewDesignBody,
  saveDesignBody,
  updateDesignBody,
} from './designs.schemas';
import * as service from './designs.service';
import { answer } from '../shared/audit';

const tag = 'Designs';
const designId = { name: 'id', notFound: notFound1 };

/**
 * Herald extension (issue 34): the account's saved designs. Their ids are `template_id`s: they
 * are listed by GET /get-design/template after the built-ins and chosen by sends, automation
 * emails and A/B variations like them.
 */
export const designRoutes: RouteDef[] = [
  route({
    method: 'post',
    path: '/designs/save',
    tag,
    summary: 'Herald extension: save a design (block document, Markdown or HTML), rendered to HTML once, here',
    description:
      'The answer names what Herald added to the design in `notices`: an unsubscribe link in the footer when the design has no link to ' +
      '((unsubscribe_preferences)), a viewport meta tag when its head has none.',
    body: saveDesignBody,
    bodyLimit: 'design',
    response: designSavedResponse,
    failures: ['AUTH', 'VAL', 'TOO_LARGE'],
    permission: 'campaigns:manage',
    audit: {
      action: 'design.created',
      entry: ({ body }, envelope) => ({ objectKind: 'design', objectId: Number(answer(envelope).id), summary: `“${body.template_name}” (${body.format})` }),
    },
    handle: async ({ ctx, body }) => ok(await service.saveDesign(ctx, body)),
  }),
  route({
    method: 'post',
    path: '/designs/update',
    tag,
    summary: 'Herald extension: change a saved design (the fields given); it is rendered again',
    description:
      'A change of `format` never loses what is sent: blocks → html and markdown → html convert (the rendered HTML becomes the source); ' +
      'every other change is refused (VAL on format).',
    id: { ...designId, requiredMessage: true },
    body: updateDesignBody,
    bodyLimit: 'design',
    response: designSavedResponse,
    failures: ['AUTH', 'VAL', 'NF1', 'TOO_LARGE'],
    permission: 'campaigns:manage',
    audit: {
      action: 'design.updated',
      entry: ({ id, body }) => ({ objectKind: 'design', objectId: id, summary: [body.template_name === undefined ? '' : `“${body.template_name}”`, body.format ? `to ${body.format}` : '', body.source === undefined ? '' : 'source changed'].filter(Boolean).join(', ') }),
    },
    handle: async ({ ctx, id, body }) => ok(await service.updateDesign(ctx, id, body)),
  }),
  route({
    method: 'get',
    path: '/designs/list',
    tag,
    summary: 'Herald extension: the account’s saved designs, newest first (without their texts: see details)',
    list: true,
    response: designsListResponse,
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('designs', await service.listDesigns(ctx, paging))),
  }),
  route({
    method: 'get',
    path: '/designs/details',
    tag,
    summary: 'Herald extension: one saved design with its source and rendered HTML',
    id: designId,
    response: z.object({ design: designRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok({ design: await service.findDesign(ctx, id) }),
  }),
  route({
    method: 'delete',
    path: '/designs/delete',
    tag,
    summary: 'Herald extension: delete a saved design',
    description:
      'Refused (VAL) while a scheduled or running single send (its own design or an A/B variation’s) or an email of a live automation ' +
      'uses it. The row stays, so what already names the design keeps its HTML; it is gone from the lists and cannot be chosen again.',
    id: designId,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1', 'VAL'],
    permission: 'campaigns:manage',
    audit: {
      action: 'design.deleted',
      entry: ({ id }) => ({ objectKind: 'design', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteDesign(ctx, id);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/designs/preview',
    tag,
    summary: 'Herald extension: an unsaved design as a recipient gets it, placeholders filled with sample values',
    description:
      'Give `format` and `source`, or `template_html`, or `template_json` (a block document). The design is rendered as save would ' +
      'render it, then by the send’s own renderer: the same HTML a send of it delivers, but for the sample values.',
    body: previewDesignBody,
    bodyLimit: 'design',
    response: designPreviewResponse,
    failures: ['AUTH', 'VAL', 'TOO_LARGE'],
    permission: 'campaigns:manage',
    handle: async ({ ctx, deps, body }) => ok(await service.previewDesign(ctx, deps.config, body)),
  }),
];
