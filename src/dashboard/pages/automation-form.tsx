import type { Request, Response } from 'express';
import { automationRoutes } from '../../resources/automations/automations.router';
import { listContactTypes } from '../../resources/contact-types/contact-types.service';
import { listSegments } from '../../resources/segments/segments.service';
import { listGroups } from '../../resources/unsubscribe-groups/unsubscribe-groups.service';
import { emptyForm, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { sendPage, type PageContext } from '../respond';
import { FormPage, posted, routeOf, withNone } from './sender-kit';

/**
 * A new automation (POST /automations/create): every field the route takes. It starts as a
 * draft; its emails are added on its page, then it is set live.
 */
const CREATE = routeOf(automationRoutes, '/automations/create');

const FIELDS = ['automation_name', 'type', 'automation_for', 'unsubscribe_group_id', 'exit_criteria'];
const TYPES: Choice[] = [
  { value: 'welcome', label: 'Welcome: contacts who join after it goes live' },
  { value: 'custom', label: 'Custom: everyone in the list or segment, and whoever joins later' },
];
const EXIT: Choice[] = [
  { value: '0', label: 'Only when they unsubscribe' },
  { value: '1', label: 'Also when they leave the list or segment' },
];

/** The lists (`contacts_<id>`) and segments (`segments_<id>`) an automation can be for, and the account's groups. */
async function choices(p: PageContext) {
  const [types, segments, groups] = await Promise.all([listContactTypes(p.ctx), listSegments(p.ctx), listGroups(p.ctx)]);
  const targets: Choice[] = [
    ...(types.rows as Array<{ id: number; name: string }>).map((t) => ({ value: `contacts_${t.id}`, label: `List: ${t.name}` })),
    ...(segments.rows as unknown as Array<{ id: number; segment_name: string }>).map((s) => ({ value: `segments_${s.id}`, label: `Segment: ${s.segment_name}` })),
  ];
  const groupChoices = (groups.rows as Array<{ id: number; group_name: string }>).map((g) => ({ value: String(g.id), label: g.group_name }));
  return { targets, groups: groupChoices };
}

async function renderForm(res: Response, p: PageContext, status: number, state: FormState): Promise<void> {
  const c = await choices(p);
  sendPage(
    res,
    status,
    <FormPage
      heading="New automation"
      active="automations"
      csrf={p.session.csrf}
      back={{ href: '/app/automations', label: 'Automations' }}
      state={state}
      fields={FIELDS}
      action="/app/automations/new"
      submit="Create the automation"
    >
        <Field state={state} name="automation_name" label="Name" required />
        <Field state={state} name="type" label="Who enters" type="select" choices={withNone('Choose', TYPES)} required />
        <Field state={state} name="automation_for" label="List or segment" type="select" choices={withNone('Choose a list or segment', c.targets)} required />
        <Field
          state={state}
          name="unsubscribe_group_id"
          label="Unsubscribe group"
          type="select"
          choices={withNone('Choose a group', c.groups)}
          hint={
            <>
              Its emails’ unsubscribe link leaves this group. <a href="/app/senders/groups/new">Add a group</a>
            </>
          }
          required
        />
        <Field state={state} name="exit_criteria" label="A contact stops getting its emails" type="select" choices={EXIT} />
    </FormPage>,
  );
}

export const newAutomationPage = (_req: Request, res: Response, p: PageContext) => renderForm(res, p, 200, emptyForm({ exit_criteria: '0' }));

export async function createAutomationAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const values = posted(req);
  const done = await submitRoute(CREATE, p, req, res, { body: values });
  if (done.ok) res.redirect(303, `/app/automations/${(done.message as { utr: string }).utr}?done=created`);
  else await renderForm(res, p, done.status, { values, errors: done.errors });
}
