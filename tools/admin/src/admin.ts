import { AccountsError, createAccounts, isRole, type PublicSigningKey, WorkspaceRepository } from '@media/accounts';
import { ConfigError, createRedis, loadConfig } from '@media/common';
import { configuredLimits, JobRepository, LIMIT_NAMES, LimitRepository, type LimitName } from '@media/jobs';
import { resealLinkKey, SecretBox, StoreKeys } from '@media/storage';
import { retryCallback } from './callback-commands';
import type { AdminContext } from './context';
import { commandHelp, overviewHelp, type CommandHelp } from './help';

export type { AdminContext } from './context';

export type Command = (ctx: AdminContext, flags: Record<string, string>) => Promise<unknown>;

function required(flags: Record<string, string>, name: string): string {
  const value = flags[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

export class UsageError extends Error {}

/** `--create-per-minute N` etc.: a positive integer, or `default` to drop the workspace's override. */
function limitFlag(flags: Record<string, string>, name: LimitName): number | null | undefined {
  const flag = name.replaceAll('_', '-');
  const value = flags[flag];
  if (value === undefined) return undefined;
  if (value === 'default') return null;
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new UsageError(`--${flag} must be a positive integer or "default"`);
  return Number(value);
}

export const COMMANDS: Record<string, CommandHelp & { run: Command }> = {
  'create-workspace': {
    usage: 'create-workspace --name NAME [--owner-email EMAIL]',
    summary: "a workspace, its API key, its signing secret and the owner's dashboard sign-in",
    description:
      'Makes a workspace with one API key, one signing secret and an owner who signs in to the dashboard\n' +
      '(PUBLIC_BASE_URL/dashboard/). Prints {workspace_id, name, api_key, signing_secret, dashboard: {email,\n' +
      'password, role}}; the key and the password are shown only here (the store keeps hashes).',
    options: {
      '--name NAME': "the workspace's name",
      '--owner-email EMAIL': "the owner's e-mail, their dashboard sign-in (default owner@<name>.local)",
    },
    settings: ['SECRETS_ENCRYPTION_KEYS'],
    run: async (ctx, flags) => {
      const name = required(flags, 'name');
      // A DNS label is at most 63 characters: a long name still makes an address that is one.
      const label =
        name
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .slice(0, 63) || 'workspace';
      const email = flags['owner-email'] ?? `owner@${label}.local`;
      const created = await ctx.accounts.createWorkspace(name, email);
      return {
        workspace_id: created.workspace.id,
        name,
        api_key: created.apiKey,
        signing_secret: created.signingSecret,
        // The owner's sign-in for the dashboard at PUBLIC_BASE_URL/dashboard/; the password is shown only here.
        dashboard: { email: created.owner.email, password: created.owner.password, role: 'owner' },
      };
    },
  },
  'rotate-secret': {
    usage: 'rotate-secret --workspace ID',
    summary: 'a new signing secret; the previous one keeps signing for the overlap',
    description:
      'A new signing secret for the workspace. The previous one keeps signing beside it until\n' +
      'previous_secret_expires_at (SECRET_ROTATION_OVERLAP_SECONDS from now; null when that is 0). Prints\n' +
      '{workspace_id, signing_secret, previous_secret_expires_at}.',
    options: { '--workspace ID': "the workspace's id (ws_…)" },
    settings: ['SECRETS_ENCRYPTION_KEYS', 'SECRET_ROTATION_OVERLAP_SECONDS'],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const { current, previous } = await ctx.accounts.rotateSecret(workspaceId);
      return {
        workspace_id: workspaceId,
        signing_secret: current.secret,
        previous_secret_expires_at: previous ? new Date(previous.expires_ms).toISOString() : null,
      };
    },
  },
  'enable-asymmetric-signing': {
    usage: 'enable-asymmetric-signing --workspace ID',
    summary: 'turns on v1a (ed25519) signatures and prints the public key',
    description:
      'Turns on v1a (ed25519) signatures for the workspace: its callbacks carry a v1a signature beside the v1\n' +
      'ones. Prints {workspace_id, public_key, enabled_now, public_keys}; the public key (whpk_…) is also served\n' +
      'at GET /v1/webhook-keys/{workspace_id}. Run again, it changes nothing (enabled_now: false, the same key).',
    options: { '--workspace ID': "the workspace's id (ws_…)" },
    settings: ['SECRETS_ENCRYPTION_KEYS'],
    // Idempotent: run again, it keeps the key pair it made the first time (receivers may hold its public key).
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const { enabled_now, keys } = await ctx.accounts.enableAsymmetricSigning(workspaceId);
      return { workspace_id: workspaceId, public_key: keys[0].public_key, enabled_now, public_keys: keys.map(publicKeyRow) };
    },
  },
  'rotate-signing-key': {
    usage: 'rotate-signing-key --workspace ID',
    summary: 'a new ed25519 key pair; the previous one keeps signing for the overlap',
    description:
      'A new ed25519 key pair signs at once; the previous one keeps signing beside it until\n' +
      'previous_key_expires_at (SECRET_ROTATION_OVERLAP_SECONDS from now). Needs enable-asymmetric-signing\n' +
      'first. Prints {workspace_id, public_key, previous_key_expires_at, public_keys}.',
    options: { '--workspace ID': "the workspace's id (ws_…)" },
    settings: ['SECRETS_ENCRYPTION_KEYS', 'SECRET_ROTATION_OVERLAP_SECONDS'],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const keys = await ctx.accounts.rotateSigningKey(workspaceId);
      const previous = keys.find((k) => k.expires_ms !== 0);
      return {
        workspace_id: workspaceId,
        public_key: keys[0].public_key,
        previous_key_expires_at: previous ? new Date(previous.expires_ms).toISOString() : null,
        public_keys: keys.map(publicKeyRow),
      };
    },
  },
  'add-member': {
    usage: 'add-member --workspace ID --email EMAIL --role owner|admin|member',
    summary: 'a dashboard member, with a password shown once',
    description:
      'Adds a member who signs in to the dashboard; adding an e-mail again gives it a new password and role\n' +
      'and ends its open sessions. Prints {workspace_id, dashboard: {email, password, role}}; the password is\n' +
      'shown only here.',
    options: {
      '--workspace ID': "the workspace's id (ws_…)",
      '--email EMAIL': "the member's e-mail, their sign-in",
      '--role owner|admin|member': 'owners and admins manage keys and secrets; owners also manage members',
    },
    settings: [],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const role = required(flags, 'role');
      if (!isRole(role)) throw new UsageError('--role must be owner, admin or member');
      const member = await ctx.accounts.addMember(workspaceId, required(flags, 'email'), role);
      // The password is shown only here: the store keeps its scrypt hash.
      return { workspace_id: workspaceId, dashboard: member };
    },
  },
  'remove-member': {
    usage: 'remove-member --workspace ID --email EMAIL',
    summary: 'removes a dashboard member and ends their sessions (never the last owner)',
    description: 'Removes a member and ends their open sessions; the last owner stays. Prints {workspace_id, removed}.',
    options: {
      '--workspace ID': "the workspace's id (ws_…)",
      '--email EMAIL': "the member's e-mail",
    },
    settings: [],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const email = required(flags, 'email');
      await ctx.accounts.removeMember(workspaceId, email);
      return { workspace_id: workspaceId, removed: email.trim().toLowerCase() };
    },
  },
  'reencrypt-secrets': {
    usage: 'reencrypt-secrets',
    summary: 'seals every stored secret under the newest SECRETS_ENCRYPTION_KEYS key',
    description:
      "After SECRETS_ENCRYPTION_KEYS gains a newest key (or is set for the first time): every workspace's\n" +
      'signing secrets and ed25519 keys, and the link-signing key, sealed under it, so that older keys can go.\n' +
      'Prints {workspaces, workspaces_resealed, link_signing_key}.',
    options: {},
    settings: ['SECRETS_ENCRYPTION_KEYS', 'LINK_SIGNING_SECRET'],
    // After SECRETS_ENCRYPTION_KEYS gains a newest key (or is set for the first time): every
    // workspace's signing secrets and ed25519 secret keys, and the link-signing key, sealed under
    // it, so older keys can go.
    run: async (ctx) => {
      if (ctx.config.secretsEncryptionKeys.length === 0) throw new UsageError('SECRETS_ENCRYPTION_KEYS is not set: there is no key to seal under');
      const box = SecretBox.of(ctx.config.secretsEncryptionKeys);
      const ids = await ctx.workspaces.list();
      let resealed = 0;
      for (const id of ids) if (await ctx.workspaces.resealSecrets(id)) resealed++;
      const keys = new StoreKeys(ctx.config.keyPrefix);
      const stored = ctx.config.linkSigningSecret ? undefined : await ctx.redis.get(keys.linkKey());
      const linkKey = ctx.config.linkSigningSecret
        ? 'configured'
        : stored === null || stored === undefined
          ? // The first service to start makes it, sealed under the newest key.
            'none yet'
          : (await resealLinkKey(ctx.redis, keys, box, stored))
            ? 'resealed'
            : 'already sealed';
      return { workspaces: ids.length, workspaces_resealed: resealed, link_signing_key: linkKey };
    },
  },
  'list-keys': {
    usage: 'list-keys --workspace ID',
    summary: "the workspace's API keys: id, prefix, created, last used",
    description: "The workspace's API keys, never the keys themselves. Prints {workspace_id, api_keys: [{id, prefix,\ncreated_at, last_used_at}]}.",
    options: { '--workspace ID': "the workspace's id (ws_…)" },
    settings: [],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      if (!(await ctx.workspaces.get(workspaceId))) throw new UsageError(`No workspace ${workspaceId}.`);
      const keys = await ctx.accounts.apiKeys(workspaceId);
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      return {
        workspace_id: workspaceId,
        api_keys: keys.map((k) => ({ id: k.id, prefix: k.prefix, created_at: iso(k.created_ms), last_used_at: iso(k.last_used_ms) })),
      };
    },
  },
  'revoke-key': {
    // Straight to Redis, past every gateway and its rate limits: what an owner uses when the
    // dashboard is out of reach, or a leaked key is flooding the workspace.
    usage: 'revoke-key --workspace ID --key-id ID',
    summary: 'revokes an API key at once, however busy the API is',
    description: 'Revokes one API key of the workspace, straight in the store. Prints {workspace_id, revoked}.',
    options: {
      '--workspace ID': "the workspace's id (ws_…)",
      '--key-id ID': "the key's id, as list-keys shows it",
    },
    settings: [],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const keyId = required(flags, 'key-id');
      await ctx.accounts.revokeApiKey(workspaceId, keyId);
      return { workspace_id: workspaceId, revoked: keyId };
    },
  },
  'retry-callback': {
    usage: 'retry-callback --id MSG_ID [--workspace ID]',
    summary: "one manual attempt of a callback now, and the receiver's answer",
    description:
      "Queues one manual attempt of the callback (the dashboard's Retry) and waits for the dispatcher to make\n" +
      "it, so that the receiver's answer is printed: {message_id, request_id, requested_at, attempt, state,\n" +
      'attempts, next_attempt_at}; attempt is null when no dispatcher made it in time (is one running?),\n' +
      'and it stays queued.',
    options: {
      '--id MSG_ID': "the callback's id (msg_…)",
      '--workspace ID': "only if the callback is this workspace's (default: any workspace's)",
    },
    settings: ['WEBHOOK_TIMEOUT_MS'],
    run: (ctx, flags) => retryCallback(ctx, required(flags, 'id'), flags.workspace),
  },
  'set-limits': {
    usage: 'set-limits --workspace ID [--create-per-minute N] [--read-per-minute N] [--max-waiting-jobs N]  (N or "default")',
    summary: "the workspace's own rate and waiting-jobs limits",
    description:
      'Sets the workspace\'s own limits; a limit not given stays as it is, "default" drops the workspace\'s own.\n' +
      'Prints {workspace_id, limits}, the limits now in force.',
    options: {
      '--workspace ID': "the workspace's id (ws_…)",
      '--create-per-minute N': 'creation calls a minute (a positive integer, or "default")',
      '--read-per-minute N': 'read calls a minute (a positive integer, or "default")',
      '--max-waiting-jobs N': 'jobs waiting to be generated at once (a positive integer, or "default")',
    },
    settings: ['RATE_LIMIT_CREATE_PER_MINUTE', 'RATE_LIMIT_READ_PER_MINUTE', 'MAX_WAITING_JOBS_PER_WORKSPACE'],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      const changes = Object.fromEntries(LIMIT_NAMES.map((name) => [name, limitFlag(flags, name)]));
      if (!(await ctx.workspaces.get(workspaceId))) throw new UsageError(`No workspace ${workspaceId}.`);
      const limits = await ctx.limits.override(workspaceId, changes);
      return { workspace_id: workspaceId, limits };
    },
  },
  ledger: {
    usage: 'ledger --workspace ID',
    summary: "the workspace's charges, one per finished job, and their total",
    description: "The workspace's charges. Prints {workspace_id, total, entries: [{job_id, workspace_id, model, amount,\ncreated_ms}]}.",
    options: { '--workspace ID': "the workspace's id (ws_…)" },
    settings: [],
    run: async (ctx, flags) => {
      const workspaceId = required(flags, 'workspace');
      if (!(await ctx.workspaces.get(workspaceId))) throw new UsageError(`No workspace ${workspaceId}.`);
      const entries = await ctx.jobs.ledger(workspaceId);
      const total = entries.reduce((sum, e) => sum + Math.round(e.amount * 1e6), 0) / 1e6;
      return { workspace_id: workspaceId, total, entries };
    },
  },
};

/** A public signing key as the CLI prints it; times in ISO 8601 like the rest of its output. */
function publicKeyRow(key: PublicSigningKey): { public_key: string; created_at: string; expires_at: string | null } {
  return {
    public_key: key.public_key,
    created_at: new Date(key.created_ms).toISOString(),
    expires_at: key.expires_ms === 0 ? null : new Date(key.expires_ms).toISOString(),
  };
}

export function parseFlags(args: string[]): Record<string, string> {
  // No prototype: a flag named like an Object method must not read as set.
  const flags: Record<string, string> = Object.create(null);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    const [name, inline] = arg.slice(2).split('=', 2);
    if (name in flags) throw new UsageError(`--${name} is given twice`);
    flags[name] = inline ?? args[++i] ?? '';
  }
  return flags;
}

const HELP_FLAGS = ['--help', '-h'];

/**
 * The help `argv` asks for (`--help` or `-h`, alone or after a command), to print as it is with exit
 * code 0; undefined when it asks for none. Nothing is read from the environment or the store.
 */
export function adminHelp(argv: string[]): string | undefined {
  const [name, ...rest] = argv;
  if (name !== undefined && HELP_FLAGS.includes(name)) return overviewHelp(COMMANDS);
  const command = name && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command && rest.some((arg) => HELP_FLAGS.includes(arg))) return commandHelp(command);
  return undefined;
}

/** Where the CLI reads its settings and writes its output: in main.ts, the process's own. */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/**
 * The CLI on `argv`, as main.ts runs it: help, or the command's answer as JSON, on stdout; a refusal
 * (usage, configuration) or a failure on stderr. Resolves with the exit code: 0, 2 for a refusal, 1
 * for a failure.
 */
export async function adminMain(argv: string[], io: AdminIo): Promise<number> {
  const help = adminHelp(argv);
  if (help !== undefined) {
    io.stdout.write(help);
    return 0;
  }
  try {
    const result = await runAdmin(argv, io.env);
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    const known = err instanceof UsageError || err instanceof ConfigError;
    io.stderr.write(`${known ? err.message : `admin: ${err instanceof Error ? err.message : String(err)}`}\n`);
    return known ? 2 : 1;
  }
}

export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<unknown> {
  const [name, ...rest] = argv;
  const command = name && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(`${name ? `unknown command "${name}"` : 'no command given'}\n\n${overviewHelp(COMMANDS)}`);
  const flags = parseFlags(rest);
  // A mistyped flag must not be ignored: an optional one (a limit, say) would read as left out.
  const known = new Set([...command.usage.matchAll(/--([a-z-]+)/g)].map((m) => m[1]));
  const unknown = Object.keys(flags).filter((flag) => !known.has(flag));
  if (unknown.length > 0) throw new UsageError(`unknown flag ${unknown.map((f) => `--${f}`).join(', ')}\nusage: admin ${command.usage}`);
  const config = loadConfig(env);
  const redis = createRedis(config.redis, 'request');
  // A connection error reaches the command that met it; kept to say so, instead of ioredis
  // printing a stack trace for every retry.
  let connectionError: Error | undefined;
  redis.on('error', (err: Error) => (connectionError = err));
  const keys = new StoreKeys(config.keyPrefix);
  try {
    // One Redis: ioredis's own retries (maxRetriesPerRequest) end a command that cannot be sent.
    if (config.redis.kind !== 'single') await reachable(redis, () => connectionError);
    const limits = new LimitRepository(redis, keys, configuredLimits(config));
    const context = {
      config,
      redis,
      workspaces: new WorkspaceRepository(redis, keys, SecretBox.of(config.secretsEncryptionKeys)),
      jobs: new JobRepository(redis, keys),
      limits,
      accounts: createAccounts(config, redis),
    };
    return await command.run(context, flags);
  } catch (err) {
    // Refusals of the accounts rules (last owner, unknown member, bad e-mail) are the operator's input, not a crash.
    if (err instanceof AccountsError) throw new UsageError(err.message);
    if (err instanceof UnreachableRedisError || (connectionError && redis.status !== 'ready')) {
      throw new Error(`cannot reach Redis (REDIS_URL or its REDIS_* settings): ${(connectionError ?? (err as Error)).message}`);
    }
    throw err;
  } finally {
    redis.disconnect();
  }
}

/** How long the CLI waits for Redis to answer before it says it cannot reach it. */
const REACH_TIMEOUT_MS = 10_000;

class UnreachableRedisError extends Error {}

/**
 * Waits until the connection is ready, and gives up at its first error or after
 * {@link REACH_TIMEOUT_MS}: a Cluster or Sentinel client retries forever and queues the command
 * meanwhile, so without this an unreachable one (or a wrong primary name) kept the CLI silent for good.
 */
async function reachable(redis: ReturnType<typeof createRedis>, lastError: () => Error | undefined): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const give = (err: Error) => {
      clearTimeout(timer);
      redis.off('ready', ready);
      redis.off('error', give);
      reject(new UnreachableRedisError(err.message));
    };
    const ready = () => {
      clearTimeout(timer);
      redis.off('error', give);
      resolve();
    };
    const timer = setTimeout(() => give(lastError() ?? new Error(`no answer within ${REACH_TIMEOUT_MS / 1000} s`)), REACH_TIMEOUT_MS);
    redis.once('ready', ready);
    redis.on('error', give);
  });
}
