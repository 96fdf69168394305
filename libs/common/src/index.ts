// What @media/common offers, by concern. Named, so that a reader sees where each name comes from
// and a module's internals stay its own.

export { ApiError, OUTAGE_RETRY_AFTER_SECONDS, type ErrorType } from './api-error';
export { checkJsonShape, JSON_MAX_DEPTH, JSON_MAX_VALUES, jsonBody } from './json-body';
export {
  CONFIG_KEYS,
  ConfigError,
  loadConfig,
  parseModelMap,
  type AppConfig,
  type BlobStoreSettings,
  type GeneratorBackendSettings,
  type LocalStackSettings,
  type RedisAuth,
  type RedisTarget,
  type RedisTls,
} from './config';
export { SETTINGS, settingRow, settingsTable, type SettingName, type SettingValues } from './settings';
export { READERS, type Reader, type Setting } from './setting-kinds';
export { PermanentJobError } from './errors';
export { CRASH_POINTS, FaultInjector, type CrashPoint } from './faults';
export { createLogger, LOG_FORMATS, warnIfCallbackChecksRelaxed, warnIfSecretsUnsealed, type LogFormat, type Logger } from './logger';
export { coalesceWrites, createRedis, duplicateRedis, isCluster, logRedisErrors, pingRedis, storeAnswers } from './redis';
export { bullKey, bullPrefix, hasHashTag, scheduleKey, storePrefix, storeShardPrefix, storeShards } from './keyspace';
export { LuaScript } from './lua-script';
export { FollowingSentinelConnector, sentinelPlacement, type SentinelPlacement } from './sentinel-connector';
export { DRAINING, STARTING, StoreReachability, STORE_UNREACHABLE_LOG_AFTER_MS, type Readiness } from './store-reachability';
export {
  createMetricsRegistry,
  METRIC_PREFIX,
  NO_CALLBACK_METRICS,
  NO_GENERATION_METRICS,
  NO_RETENTION_METRICS,
  PromCallbackMetrics,
  PromGenerationMetrics,
  PromHttpMetrics,
  PromRetentionMetrics,
  registerScrapedGauge,
  replicaWaitShortCounter,
  SCRAPE_READ_TIMEOUT_MS,
  type CallbackMetrics,
  type GenerationMetrics,
  type HttpMetrics,
  type RetentionMetrics,
} from './metrics';
export { startOpsServer, type HealthCheck, type OpsServer, type OpsServerOptions } from './ops-server';
export { drainWithin, every } from './shutdown';
export { checkScratchDir, removeScratchDir, scratchDir, sweepStaleScratch } from './scratch';
export { assertWritableDirectory, UnwritableDirectoryError } from './writable';
export { withTimeout } from './timeout';
