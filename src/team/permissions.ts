/**
 * Roles and permissions (issue 37, docs/decisions.md "Teams"; the README's "Your team" prints this
 * table). A role is a fixed set of named permissions; every API route (RouteDef.permission) and
 * every dashboard action checks exactly one. The account's API keys act as the owner.
 */
export const ROLES = ['owner', 'admin', 'sender', 'editor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Every permission, with what it guards (the README's table is made from these words). */
export const PERMISSIONS = {
  read: 'see everything the account has: reports, sends, designs, contacts, lists, settings',
  'campaigns:manage': 'create, edit, preview, test and delete sends, designs and automations',
  'campaigns:send': 'schedule, send, pause, resume and cancel sends; start and stop automations; pick an A/B winner',
  'audience:manage': 'contacts, lists, segments, custom fields, imports, exports and signup forms',
  'contacts:erase': 'erase a person (every record of an address) and answer data requests',
  'settings:manage': 'senders, sending domains, unsubscribe groups, suppressions and webhooks',
  'users:manage': 'invite and remove users, change roles, reset a second factor, require one for everybody',
  'audit:read': 'the activity log (who changed what)',
  'account:manage': 'the account’s API keys and security: requiring a second factor of every user, making a user the owner',
} as const;
export type Permission = keyof typeof PERMISSIONS;

const EDITOR: Permission[] = ['read', 'campaigns:manage', 'audience:manage'];

/** What each role may do. `admin` is everything but account:manage (keys, security, the owner: users:manage stops at owners). */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: Object.keys(PERMISSIONS) as Permission[],
  admin: (Object.keys(PERMISSIONS) as Permission[]).filter((p) => p !== 'account:manage'),
  sender: [...EDITOR, 'campaigns:send'],
  editor: EDITOR,
  viewer: ['read'],
};

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  owner: 'everything, including users, keys and erasure',
  admin: 'everything but the API keys and the owner',
  sender: 'editor, plus scheduling and sending (campaigns:send)',
  editor: 'create and edit sends, designs, lists, segments, contacts and automations; not schedule or send',
  viewer: 'read-only: reports, contacts, settings',
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}

/** The refusal's words (403): the permission by its name. */
export function refusedMessage(permission: Permission): string {
  return `Your role does not allow this: it needs the permission ${permission}.`;
}
