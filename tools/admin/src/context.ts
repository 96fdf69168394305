import type { WorkspaceAccounts, WorkspaceRepository } from '@media/accounts';
import type { AppConfig } from '@media/common';
import type { JobRepository, LimitRepository } from '@media/jobs';
import type { Redis } from 'ioredis';

/** Everything a command needs, built once from the validated config. */
export interface AdminContext {
  config: AppConfig;
  redis: Redis;
  workspaces: WorkspaceRepository;
  jobs: JobRepository;
  limits: LimitRepository;
  accounts: WorkspaceAccounts;
}
