import { z } from 'zod';
import { CAPTCHAS } from '../../forms/forms';
import { flag, id, integer, list, optionalText, text } from '../../http/fields';
import { flagValue, intId, pagination, timestamp } from '../shared/schemas';

/** The longest consent text a form may show beside its checkbox. */
export const CONSENT_TEXT_MAX = 2000;
/** The most fields a form may show. */
export const FIELDS_MAX = 30;
/** The most lists a form may offer. */
export const LISTS_MAX = 20;

export const REDIRECT_SCHEME = 'The :attribute must start with one of the following: http://, https://.';
export const REDIRECT_INVALID = 'The :attribute must be a valid URL.';

/**
 * A redirect after the form (success_url, confirm_url): an absolute http or https URL with a host.
 * Checked here, never fetched: Herald only sends the browser there.
 */
const redirectUrl = () =>
  text(2048).superRefine((v, ctx) => {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: REDIRECT_INVALID });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: REDIRECT_SCHEME });
    else if (!url.hostname || /[\s<>"'`]/.test(v) || url.username || url.password) ctx.addIssue({ code: 'custom', message: REDIRECT_INVALID });
  });

const formField = z.object({
  field_name: text(64).meta({ description: 'a reserved field (email, first_name, last_name, state, city, address_line1, address_line2, state_province_region, postal_code) or a custom field of the account, by name' }),
  required: flag().optional().meta({ description: '1 = the person must fill it in; default 0 (email is always required)' }),
  label: optionalText(255).meta({ description: 'shown beside the input; default: the field’s name in words' }),
});

const fields = {
  name: text(255),
  contact_type_ids: list(id(), LISTS_MAX).meta({ description: 'the lists (contact types) it subscribes to; with several, the person chooses' }),
  fields: list(formField, FIELDS_MAX).meta({
    description: 'the fields shown, in order: fields[0][field_name]=email&fields[0][required]=1… Email is added (required) when missing',
  }),
  double_opt_in: flag().optional().meta({ description: '1 (default): a submission is pending until confirmed from the mailed link; 0: the contact is added at once' }),
  consent_text: text(CONSENT_TEXT_MAX).meta({ description: 'shown beside a checkbox that must be ticked; kept with each consent record' }),
  success_url: redirectUrl().optional().meta({ description: 'http(s) URL the person is sent to after submitting; default: Herald’s own page' }),
  confirm_url: redirectUrl().optional().meta({ description: 'http(s) URL the person is sent to after confirming; default: Herald’s own page' }),
  confirmation_subject: optionalText(255).meta({ description: 'subject of the confirmation mail; default “Please confirm your subscription”' }),
  confirmation_sender_id: id().optional().meta({ description: 'a verified sender of the account; required when double_opt_in is 1' }),
  captcha: z.enum(CAPTCHAS).optional().meta({ description: 'none (default) | proof_of_work (a self-hosted proof-of-work challenge, no third party)' }),
};

export const saveFormBody = z.object(fields);
export type SaveFormInput = z.infer<typeof saveFormBody>;

export const statsQuery = z.object({
  days: integer(1, 366).optional().meta({ description: 'how many UTC days, ending today (default 30)' }),
});

const formFieldRecord = z.strictObject({
  field_id: intId(),
  field_name: z.string(),
  is_reserved: flagValue(),
  label: z.string(),
  required: flagValue(),
  input_name: z.string().meta({ description: 'the name of its input in the HTML form: the reserved field’s name, or custom_field[<name>]' }),
});

const publicId = () => z.string().meta({ description: 'the form’s public id: /subscribe/<public_id>', example: '0000002a00000007c0ffee…' });

export const formListRecord = z.strictObject({
  id: intId(),
  public_id: publicId(),
  name: z.string(),
  contact_type_ids: z.array(intId()),
  double_opt_in: flagValue(),
  captcha: z.enum(CAPTCHAS),
  created_at: timestamp(),
  updated_at: timestamp(),
});

export const formRecord = formListRecord.extend({
  fields: z.array(formFieldRecord),
  consent_text: z.string(),
  success_url: z.string().nullable(),
  confirm_url: z.string().nullable(),
  confirmation_subject: z.string(),
  confirmation_sender_id: intId().nullable(),
  hosted_url: z.string().meta({ description: 'the hosted page: PUBLIC_URL/subscribe/<public_id>' }),
  json_url: z.string().meta({ description: 'POST here with Accept: application/json from a site’s own front end' }),
  html_snippet: z.string().meta({ description: 'a plain <form> posting to the hosted URL, to paste into any page (works without script)' }),
});
export type FormRecord = z.infer<typeof formRecord>;

export const formsListResponse = z.object({ forms: z.array(formListRecord), pagination: pagination.optional() });
export const formSavedResponse = z.object({ id: intId(), public_id: publicId() });

const dayStats = z.strictObject({
  submissions: z.number().int(),
  confirmations: z.number().int(),
  confirmation_rate: z.number().nullable().meta({ description: 'confirmations / submissions, 4 decimals; null without submissions' }),
  pending: z.number().int().meta({ description: 'submissions of that day still waiting for confirmation' }),
});
export const formStatsResponse = z.object({
  stats: z.strictObject({
    form_id: intId(),
    days: z.array(dayStats.extend({ day: z.string().meta({ description: 'YYYY-MM-DD (UTC)' }) })),
    totals: dayStats,
  }),
});
export type FormStats = z.infer<typeof formStatsResponse>['stats'];
