import type { Role } from './workspace-store';

export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

/** Everything a dashboard member may be refused. Reading and retrying callbacks are open to every role. */
export type Action = 'rotate_secret' | 'end_overlap' | 'manage_keys' | 'manage_members' | 'manage_endpoints' | 'read_audit';

/**
 * Who may do what: owners everything; admins rotate the secret, manage keys and webhook endpoints
 * and read the audit; members read and retry. Ending the overlap cuts off receivers still on the old
 * secret at once, so it is the owner's call alone. Sending an endpoint a test event counts as
 * managing it: members see endpoints read-only.
 */
const ALLOWED: Record<Action, readonly Role[]> = {
  rotate_secret: ['owner', 'admin'],
  manage_keys: ['owner', 'admin'],
  end_overlap: ['owner'],
  manage_members: ['owner'],
  manage_endpoints: ['owner', 'admin'],
  read_audit: ['owner', 'admin'],
};

export function can(role: Role, action: Action): boolean {
  return ALLOWED[action].includes(role);
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
