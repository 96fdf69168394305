import { READERS, tableRow, int, list, str } from './setting-kinds';
import { SETTING_NAMES, SETTINGS, settingValues, type SettingValues } from './settings';

describe('the settings table', () => {
  it.each(SETTING_NAMES)('declares %s with a meaning and the processes that read it, each once', (name) => {
    const { description, readBy } = SETTINGS[name];
    expect(description.trim()).not.toBe('');
    expect(readBy.length).toBeGreaterThan(0);
    expect(new Set(readBy).size).toBe(readBy.length);
  });

  it.each(SETTING_NAMES)('documents the default that %s is given', (name) => {
    // What Joi puts in for an unset variable, spelt as the variable would be.
    const { value } = SETTINGS[name].schema.validate(undefined);
    expect(value === undefined ? undefined : String(value)).toBe(SETTINGS[name].default);
  });

  it('reads typed values, defaults included', () => {
    const env: Record<string, string> = { PORT: '9000', FAULT_CRASH_POINTS: 'intake.claimed, generation.finished', REDIS_CLUSTER_NODES: 'a:1,[::1]:2' };
    const accepted = Object.fromEntries(SETTING_NAMES.map((name) => [name, SETTINGS[name].schema.validate(env[name]).value]));
    const values: SettingValues = settingValues(accepted);
    expect(values.PORT).toBe(9000);
    expect(values.KEY_PREFIX).toBe('media');
    expect(values.MODERATION_BLOCKLIST).toEqual([]);
    expect(values.FAULT_CRASH_POINTS).toEqual(['intake.claimed', 'generation.finished']);
    expect(values.REDIS_CLUSTER_NODES).toEqual([
      { host: 'a', port: 1 },
      { host: '::1', port: 2 },
    ]);
    expect(values.REDIS_SENTINELS).toBeUndefined();
    // @ts-expect-error a setting that is not declared has no value to read
    expect(values.REDIS_ULR).toBeUndefined();
  });
});

describe('tableRow', () => {
  const doc = { description: 'What it is | and a pipe.', readBy: ['dispatcher', 'gateway'] as const };

  it('gives the default, its note, and the readers in a fixed order', () => {
    expect(tableRow('A_B', int({ min: 1, default: 604_800, note: '7 days', ...doc }))).toBe(
      '| `A_B` | `604800` (7 days) | What it is \\| and a pipe. | gateway, dispatcher |',
    );
  });

  it('says unset, empty, what is shown instead, and all for every reader', () => {
    expect(tableRow('A', str({ ...doc, readBy: READERS }))).toBe('| `A` | unset | What it is \\| and a pipe. | all |');
    expect(tableRow('A', list({ ...doc, readBy: ['npm start'] }))).toBe('| `A` | empty | What it is \\| and a pipe. | `npm start` |');
    expect(tableRow('A', str({ shown: '`json`', note: 'elsewhere', ...doc }))).toBe(
      '| `A` | `json` (elsewhere) | What it is \\| and a pipe. | gateway, dispatcher |',
    );
  });
});
