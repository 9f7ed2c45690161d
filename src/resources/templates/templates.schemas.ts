import { z } from 'zod';
import { flagValue, intId, timestamp } from '../shared/schemas';

/** A design as the API shows it. Built-in designs have no created_at (spec: nullable). */
export const templateRecord = z.strictObject({
  id: intId(),
  template_name: z.string(),
  preview_image: z.string().meta({ description: 'file name, served at PUBLIC_URL/images/<preview_image>; template-saved.png (one generic thumbnail) for every saved design' }),
  json_code: z.string().meta({ description: 'the editor document: JSON {"version":1,"settings":{…},"blocks":[…]}' }),
  html_code: z.string().meta({ description: 'email HTML with ((placeholder)) tokens' }),
  is_blank: flagValue(),
  created_at: timestamp().nullable(),
  updated_at: timestamp(),
});
export type TemplateRecord = z.infer<typeof templateRecord>;

export const templatesResponse = z.object({ templates: z.array(templateRecord) });

export const dynamicContentResponse = z.object({
  contents: z.array(z.string()).meta({
    description: 'placeholder names, each usable in a design as ((name)): contact fields, custom fields, sender and unsubscribe',
    example: ['first_name', 'last_name', 'email', 'sender_name', 'sender_address', 'unsubscribe_preferences'],
  }),
});
