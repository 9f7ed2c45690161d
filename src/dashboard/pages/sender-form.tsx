import type { Request, Response } from 'express';
import { geographyBody } from '../../resources/geography/geography.service';
import { senderRoutes } from '../../resources/senders/senders.router';
import { findSender } from '../../resources/senders/senders.service';
import { emptyForm, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { pageContext, sendPage, type PageContext } from '../respond';
import { FormPage, posted, routeOf, withNone } from './sender-kit';

/**
 * A sender's form, to add one (POST /sender/save) or change one (POST /sender/update): every
 * field the API takes. The place is a country select, then the states of that country and the
 * cities of that state as selects; assets/dashboard/settings.js fetches those for a country or
 * state chosen in the browser (GET /app/senders/places.json). Without script, a state or city
 * the page does not know the choices of yet is typed as its id.
 */
const SAVE = routeOf(senderRoutes, '/sender/save');
const UPDATE = routeOf(senderRoutes, '/sender/update');

const FIELDS = [
  'nickname',
  'from_name',
  'from_email',
  'reply_to_email',
  'company_address',
  'company_address2',
  'zip_code',
  'country_id',
  'state_id',
  'city_id',
];

interface Place {
  id: number;
  name: string;
  state_id?: number;
}
interface Places {
  countries: Place[];
  states: Place[];
  cities: Place[];
}

const given = (v: unknown) => v !== undefined && v !== null && String(v).trim() !== '';
const idOf = (v: unknown): number | undefined => (typeof v === 'string' || typeof v === 'number') && /^\d{1,9}$/.test(String(v).trim()) ? Number(v) : undefined;

/**
 * The geography API's answer (its cached body) for one filter. An unknown id gives empty lists
 * (the route says so): `country_id` 0 is the countries alone, a few kilobytes instead of the
 * whole world's cities.
 */
async function places(p: PageContext, filter: { country_id?: number; state_id?: number }): Promise<Places> {
  const { body } = await geographyBody(p.ctx, filter);
  return (JSON.parse(body.toString('utf8')) as { message: Places }).message;
}

const byName = (a: Place, b: Place) => a.name.localeCompare(b.name, 'en');
const choicesOf = (list: Place[]): Choice[] => [...list].sort(byName).map((x) => ({ value: String(x.id), label: x.name }));

/** The choices the form can offer for what it holds: every country, the states of its country, the cities of its state. */
async function placeChoices(p: PageContext, values: Record<string, unknown>) {
  const countryId = idOf(values.country_id);
  const stateId = idOf(values.state_id);
  const cityId = idOf(values.city_id);
  const world = await places(p, { country_id: countryId ?? 0 });
  const cities = world.cities.filter((c) => c.state_id === stateId);
  const countryKnown = countryId !== undefined && world.countries.some((c) => c.id === countryId);
  const stateKnown = countryKnown && stateId !== undefined && world.states.some((s) => s.id === stateId);
  // A typed id that is not among the choices stays a typed id, so the form shows it again.
  const cityFits = !given(values.city_id) || cities.some((c) => c.id === cityId);
  return {
    countries: choicesOf(world.countries),
    states: countryKnown && (!given(values.state_id) || stateKnown) ? choicesOf(world.states) : undefined,
    cities: stateKnown && cityFits ? choicesOf(cities) : undefined,
  };
}

async function renderForm(res: Response, p: PageContext, status: number, opts: { title: string; action: string; submit: string; state: FormState }): Promise<void> {
  const { state } = opts;
  const choices = await placeChoices(p, state.values);
  const idHint = (what: string, first: string) => `Choose ${first} first to pick from a list, or type the ${what}’s id.`;
  sendPage(
    res,
    status,
    <FormPage
      heading={opts.title}
      active="senders"
      csrf={p.session.csrf}
      back={{ href: '/app/senders', label: 'Senders' }}
      state={state}
      fields={FIELDS}
      action={opts.action}
      submit={opts.submit}
      scripts={['settings.js']}
      attrs={{ 'data-places': '/app/senders/places.json' }}
    >
      <fieldset>
        <legend>Who the mail is from</legend>
        <Field state={state} name="nickname" label="Nickname" hint="A name for this sender inside the account." required />
        <Field state={state} name="from_name" label="From name" hint="The name recipients see." required />
        <Field state={state} name="from_email" label="From address" type="email" hint="A verification link goes here." required attrs={{ autoComplete: 'off', spellcheck: false }} />
        <Field state={state} name="reply_to_email" label="Reply-to address" type="email" required attrs={{ autoComplete: 'off', spellcheck: false }} />
      </fieldset>
      <fieldset>
        <legend>Postal address (in the footer of every email)</legend>
        <Field state={state} name="company_address" label="Address" required />
        <Field state={state} name="company_address2" label="Address, second line" />
        <Field state={state} name="zip_code" label="Postal code" />
        <Field state={state} name="country_id" label="Country" type="select" required choices={withNone('Choose a country', choices.countries)} attrs={{ 'data-place': 'country' }} />
        {choices.states ? (
          <Field state={state} name="state_id" label="State or region" type="select" choices={withNone('None', choices.states)} attrs={{ 'data-place': 'state' }} />
        ) : (
          <Field state={state} name="state_id" label="State or region" type="number" hint={idHint('state', 'a country')} attrs={{ min: 1, 'data-place': 'state' }} />
        )}
        {choices.cities ? (
          <Field state={state} name="city_id" label="City" type="select" choices={withNone('None', choices.cities)} attrs={{ 'data-place': 'city' }} />
        ) : (
          <Field state={state} name="city_id" label="City" type="number" hint={idHint('city', 'a state')} attrs={{ min: 1, 'data-place': 'city' }} />
        )}
      </fieldset>
    </FormPage>,
  );
}

const NEW = { title: 'Add a sender', action: '/app/senders/new', submit: 'Add the sender' };
const editing = (id: number, nickname: string) => ({ title: `Edit sender: ${nickname}`, action: `/app/senders/${id}/edit`, submit: 'Save the sender' });

export const newSenderPage = (_req: Request, res: Response, p: PageContext) => renderForm(res, p, 200, { ...NEW, state: emptyForm() });

export async function saveSenderAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const values = posted(req);
  const done = await submitRoute(SAVE, p, req, res, { body: values });
  if (done.ok) res.redirect(303, '/app/senders?done=added');
  else await renderForm(res, p, done.status, { ...NEW, state: { values, errors: done.errors } });
}

/** Another account's sender, a deleted or an unknown one: the API's NF1, this page's 404. */
async function senderOf(req: Request, p: PageContext) {
  return findSender(p.ctx, idOf(req.params.id) ?? 0);
}

export async function editSenderPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const s = await senderOf(req, p);
  await renderForm(res, p, 200, { ...editing(s.id, s.nickname), state: emptyForm({ ...s }) });
}

export async function updateSenderAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const s = await senderOf(req, p);
  const values = posted(req);
  const done = await submitRoute(UPDATE, p, req, res, { body: values, query: { sender_id: s.id } });
  if (done.ok) res.redirect(303, '/app/senders?done=updated');
  else await renderForm(res, p, done.status, { ...editing(s.id, s.nickname), state: { values, errors: done.errors } });
}

/**
 * For the form's script: `?country_id=` → the country's states, `?state_id=` → the state's
 * cities, each `{ id, name }` by name (from the geography API's cached answer).
 */
export async function placesJson(req: Request, res: Response): Promise<void> {
  const p = pageContext(res);
  const countryId = idOf(req.query.country_id);
  const stateId = idOf(req.query.state_id);
  const pick = (list: Place[]) => [...list].sort(byName).map((x) => ({ id: x.id, name: x.name }));
  res.set('Cache-Control', 'private, max-age=3600');
  if (stateId !== undefined) {
    res.json({ cities: pick((await places(p, { state_id: stateId })).cities) });
  } else if (countryId !== undefined) {
    res.json({ states: pick((await places(p, { country_id: countryId })).states) });
  } else {
    res.status(422).json({ status: 'failed', errors: 'Name a country_id or a state_id.' });
  }
}
