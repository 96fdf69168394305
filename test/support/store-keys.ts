import { AccountKeys } from '../../libs/accounts/src/keys';
import { CallbackKeys } from '../../libs/callbacks/src/keys';
import { JobKeys } from '../../libs/jobs/src/keys';
import { StoreKeys } from '@media/storage';

/** Every key of the store: the keyspace's shared keys and each capability's own. */
export type AllKeys = StoreKeys & CallbackKeys & JobKeys & AccountKeys;

/**
 * Every Redis key of a store under `prefix`, in one object, for tests that read or damage the
 * stored data directly (production code names only its own package's keys). It is a StoreKeys, so
 * it can be given to any store.
 */
export function allKeys(prefix: string): AllKeys {
  const store = new StoreKeys(prefix);
  return Object.assign(store, new CallbackKeys(store), new JobKeys(store), new AccountKeys(store));
}
