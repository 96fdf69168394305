import type { Redis } from 'ioredis';
import { SETTINGS, type AppConfig } from '@media/common';
import { FailureCounter, SessionRepository } from './session-store';
import { WorkspaceRepository } from './workspace-store';
import { SecretBox, StoreKeys } from '@media/storage';
import { SIGN_IN_LIMITS, WorkspaceAccounts, type AccountsDeps } from './accounts';
import { AuditLog } from './audit';

/** AUDIT_RETENTION_SECONDS's default, for callers that pass a partial config (tests, tools). */
const DEFAULT_AUDIT_RETENTION_SECONDS = Number(SETTINGS.AUDIT_RETENTION_SECONDS.default);

/** Builds workspace accounts from the validated config, the same way for the gateway, the admin CLI and tests. */
export function createAccounts(
  config: Pick<AppConfig, 'keyPrefix' | 'secretRotationOverlapSeconds'> & Partial<Pick<AppConfig, 'secretsEncryptionKeys' | 'auditRetentionSeconds'>>,
  redis: Redis,
  options: Pick<AccountsDeps, 'apiKeyCacheMs'> = {},
): WorkspaceAccounts {
  const keys = new StoreKeys(config.keyPrefix);
  return new WorkspaceAccounts({
    workspaces: new WorkspaceRepository(redis, keys, SecretBox.of(config.secretsEncryptionKeys ?? [])),
    sessions: new SessionRepository(redis, keys),
    failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
    rotationOverlapSeconds: config.secretRotationOverlapSeconds,
    audit: new AuditLog(redis, keys, config.auditRetentionSeconds ?? DEFAULT_AUDIT_RETENTION_SECONDS),
    ...options,
  });
}
