import type { Request, Response } from 'express';
import { unsubscribeGroupRoutes } from '../../resources/unsubscribe-groups/unsubscribe-groups.router';
import { findGroup } from '../../resources/unsubscribe-groups/unsubscribe-groups.service';
import { emptyForm, Field, submitRoute, type FormState } from '../form-kit';
import { MessagePage } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { FormPage, posted, routeOf } from './sender-kit';

/**
 * Unsubscribe groups: add (POST /unsubscribes-groups/save), change (…/update) and delete
 * (DELETE …/delete), each through the API's route. They are listed on the senders page.
 */
const SAVE = routeOf(unsubscribeGroupRoutes, '/unsubscribes-groups/save');
const UPDATE = routeOf(unsubscribeGroupRoutes, '/unsubscribes-groups/update');
const DELETE = routeOf(unsubscribeGroupRoutes, '/unsubscribes-groups/delete');

const FIELDS = ['group_name', 'description', 'is_display'];
const DISPLAY = [
  { value: '1', label: 'Shown: recipients can leave this group alone' },
  { value: '0', label: 'Hidden' },
];

function renderForm(res: Response, p: PageContext, status: number, opts: { title: string; action: string; submit: string; state: FormState }): void {
  const { state } = opts;
  sendPage(
    res,
    status,
    <FormPage
      heading={opts.title}
      active="senders"
      csrf={p.session.csrf}
      back={{ href: '/app/senders#groups', label: 'Unsubscribe groups' }}
      state={state}
      fields={FIELDS}
      action={opts.action}
      submit={opts.submit}
    >
      <Field state={state} name="group_name" label="Name" required />
      <Field state={state} name="description" label="Description" type="textarea" rows={3} hint="What recipients of this group get; the preferences page shows it." required />
      <Field state={state} name="is_display" label="On the unsubscribe preferences page" type="select" choices={DISPLAY} required />
    </FormPage>,
  );
}

const NEW = { title: 'Add an unsubscribe group', action: '/app/senders/groups/new', submit: 'Add the group' };
const editing = (id: number, name: string) => ({ title: `Edit group: ${name}`, action: `/app/senders/groups/${id}/edit`, submit: 'Save the group' });
const groupId = (req: Request) => (/^\d{1,9}$/.test(String(req.params.id)) ? Number(req.params.id) : 0);

export async function newGroupPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  renderForm(res, p, 200, { ...NEW, state: emptyForm({ is_display: '1' }) });
}

export async function saveGroupAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const values = posted(req);
  const done = await submitRoute(SAVE, p, req, res, { body: values });
  if (done.ok) res.redirect(303, '/app/senders?done=group-added#groups');
  else renderForm(res, p, done.status, { ...NEW, state: { values, errors: done.errors } });
}

/** Another account's group, a deleted or an unknown one: the API's NF1, this page's 404. */
export async function editGroupPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const g = await findGroup(p.ctx, groupId(req));
  renderForm(res, p, 200, { ...editing(g.id, g.group_name), state: emptyForm({ ...g }) });
}

export async function updateGroupAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const g = await findGroup(p.ctx, groupId(req));
  const values = posted(req);
  const done = await submitRoute(UPDATE, p, req, res, { body: values, query: { id: g.id } });
  if (done.ok) res.redirect(303, '/app/senders?done=group-updated#groups');
  else renderForm(res, p, done.status, { ...editing(g.id, g.group_name), state: { values, errors: done.errors } });
}

export async function deleteGroupAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const done = await submitRoute(DELETE, p, req, res, { query: { id: req.params.id } });
  if (done.ok) {
    res.redirect(303, '/app/senders?done=group-deleted#groups');
    return;
  }
  sendPage(
    res,
    done.status,
    <MessagePage title="Refused" csrf={p.session.csrf} active="senders">
      <ul class="errors">
        {Object.values(done.errors)
          .flat()
          .map((line) => (
            <li>{line}</li>
          ))}
      </ul>
      <p>
        <a href="/app/senders#groups">Back to the groups</a>
      </p>
    </MessagePage>,
  );
}
