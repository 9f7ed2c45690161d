import { ok } from '../../http/envelope';
import { route, type RouteDef } from '../../http/routes';
import { dynamicContentResponse, templatesResponse } from './templates.schemas';
import * as service from './templates.service';

const tag = 'Templates and dynamic content';

export const templateRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/get-design/template',
    tag,
    summary: 'List the designs to start an email from (Custom, the blank one, first)',
    response: templatesResponse,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx }) => ok({ templates: await service.listTemplates(ctx) }),
  }),
  route({
    method: 'get',
    path: '/get-dynamic/content',
    tag,
    summary: 'List the placeholder names usable in a design as ((name))',
    response: dynamicContentResponse,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx }) => ok({ contents: await service.listDynamicContent(ctx) }),
  }),
];
