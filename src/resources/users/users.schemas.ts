import { z } from 'zod';
import { email, flag, optionalText } from '../../http/fields';
import { ROLES } from '../../team/permissions';
import { intId, timestamp } from '../shared/schemas';

/** A role by its name (`The selected role is invalid.` otherwise). */
const role = () => z.enum(ROLES).meta({ description: `one of ${ROLES.join(', ')} (README, "Your team": what each may do)`, example: 'editor' });

export const inviteBody = z.object({
  email: email().meta({ description: 'where the invitation goes; the address the user signs in with', example: 'ada@example.com' }),
  name: optionalText(255).meta({ description: 'display name (the user may change it)' }),
  role: role(),
});
export type InviteInput = z.output<typeof inviteBody>;

export const roleBody = z.object({ role: role() });

export const twoFactorBody = z.object({
  required: flag().meta({ description: '1: every user of the account needs a second factor (one without is sent to set it up at their next sign-in); 0: each user decides' }),
});

/** A user as the API shows them: never a password, a secret or a recovery code. */
export const userRecord = z.strictObject({
  id: intId(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  status: z.enum(['active', 'invited']).meta({ description: 'invited: no password set yet (the invitation or setup link is unused)' }),
  two_factor: z.boolean().meta({ description: 'a TOTP second factor is set up' }),
  created_at: timestamp(),
  last_sign_in_at: timestamp().nullable(),
});
export type UserRecord = z.infer<typeof userRecord>;

export const invitation = z.strictObject({
  user: userRecord,
  expires_at: timestamp().meta({ description: 'when the mailed link stops working (72 hours; the link itself is only in the mail)' }),
});
